#pragma once
// The CPU backend: runs graph nodes on a persistent thread pool, with SIMD
// matmul kernels per weight format and an f16 (or f32) KV cache.
#include <map>
#include <memory>
#include <vector>

#include "backends/cpu/kv_cache.h"
#include "backends/cpu/matmul.h"
#include "backends/cpu/thread_pool.h"
#include "common/aligned_buffer.h"
#include "graph/backend.h"

namespace rayo::cpu {

class CpuBackend : public graph::Backend {
 public:
  // progress: show a progress line while weights are repacked (large models).
  // fuse: run the fused ops of graph/fusion_passes.h (fewer pool runs per step,
  // the same numbers); false runs one node per op, for comparison.
  explicit CpuBackend(int n_threads, bool progress = false, bool fuse = true);
  ~CpuBackend() override;

  std::string_view name() const override { return "cpu"; }
  std::vector<std::unique_ptr<graph::Pass>> passes() const override;
  void init_kv_cache(const graph::KvCacheConfig& config) override;
  void prepare(const graph::Graph& graph) override;
  // True for the matrices repacked at load (the quantized and half formats):
  // the kernels read only the packed copy while the instruction set stays the
  // one of the load, as it does for a process (RAYO_CPU_ISA is read once).
  bool holds_matrix_copy(const void* weight_data) const override;
  void begin_step(const graph::Graph& graph, const graph::StepInputs& inputs) override;
  void run(const graph::Graph& graph, const graph::Node& node) override;
  void end_step(const graph::Graph& graph) override {}
  std::span<const float> output(const graph::Graph& graph) override;
  void copy_kv_blocks(std::span<const std::pair<int32_t, int32_t>> src_dst) override;
  double measure_memory_bandwidth() override;  // a streaming read on all threads

  int n_threads() const { return pool_.size(); }
  const KvCache& kv_cache() const { return kv_; }

 private:
  struct GraphState {
    AlignedBuffer arena;
    AlignedBuffer workspace;  // quantized activations for matmul
    AlignedBuffer fused;      // the intermediates of fused ops (normed rows, gate and up, k and v)
    AlignedBuffer dense;      // DenseAttention: one head's keys, values transposed, and scores
    bool uses_kv = false;     // some node reads or writes the KV cache (decoder graphs)
  };
  // Runs fn(thread, n_threads) on the pool, or inline when the work is small.
  template <typename Fn>
  void parallel(int64_t work, Fn&& fn);
  // fn(r) for every row r < rows, the rows split evenly over the threads (or
  // inline when `work`, in values, is small).
  template <typename Fn>
  void for_each_row(int64_t rows, int64_t work, Fn&& fn);
  float* value(const graph::Graph& graph, int index);
  int64_t rows_of(const graph::Graph& graph, int value) const;
  // Prepares (repacks) the graph's matmul weights not prepared yet, on all threads.
  void prepare_matmul_weights(const graph::Graph& graph);
  const float* f32_weight(const graph::Graph& graph, int index);

  void run_embed(const graph::Graph& g, const graph::Node& n);
  void run_matmul(const graph::Graph& g, const graph::Node& n);
  void run_fused(const graph::Graph& g, const graph::Node& n);
  // y_i = x * W_i^T for the weights of node n, in one pool run (small ones inline).
  void multiply(const graph::Graph& g, std::span<const int> weights, const float* x, int64_t rows,
                std::span<float* const> outputs);
  void run_rows(const graph::Graph& g, const graph::Node& n);
  void run_kv_store(const graph::Graph& g, const graph::Node& n);
  void run_attention(const graph::Graph& g, const graph::Node& n);
  void run_unfold(const graph::Graph& g, const graph::Node& n);
  void run_dense_attention(const graph::Graph& g, const graph::Node& n);
  void run_cross_kv_store(const graph::Graph& g, const graph::Node& n);
  void run_cross_attention(const graph::Graph& g, const graph::Node& n);
  // The cross-attention slot of token t's sequence.
  int64_t cross_slot(int64_t t) const;

  bool progress_;
  bool fuse_;
  ThreadPool pool_;
  ThreadPool inline_pool_;  // one thread: the caller, for work too small to share
  KvCache kv_;
  // Cache row of position `pos` of the sequence of token t in the current step.
  // The cache row of token t's position pos: in its sequence's blocks, or in
  // its ring for a layer that keeps one (graph/backend.h).
  int64_t cache_row(int64_t t, int32_t pos, bool ring = false) const;

  AlignedBuffer scores_;      // per thread: attention scores, max_seq_len floats
  AlignedBuffer seq_rows_;    // per thread: cache rows of a sequence, max_seq_len int64s
  std::vector<int64_t> store_rows_;  // cache row of each token of the step
  std::vector<int64_t> ring_rows_;   // the same in the rings of sliding-window layers
  std::vector<int64_t> cross_slots_; // CrossAttention: the slot of each token
  int64_t store_row(int64_t t, int layer) const { return kv_.config().in_ring(layer) ? ring_rows_[t] : store_rows_[t]; }
  std::vector<std::pair<int64_t, int64_t>> attention_runs_;  // token ranges of one sequence, one tile each
  AlignedBuffer attention_scratch_;  // per thread: attention tile scratch and query pointers
  std::map<const void*, MatmulWeight> matmul_weights_;  // by data pointer: shared across graphs
  std::map<const void*, std::vector<float>> f32_weights_;  // norms, biases, rope factors
  std::map<const graph::Graph*, GraphState> graphs_;
  GraphState* current_ = nullptr;
  graph::StepInputs step_;
};

}  // namespace rayo::cpu
