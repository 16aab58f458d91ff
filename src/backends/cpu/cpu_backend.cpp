#include "backends/cpu/cpu_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "backends/cpu/attention.h"
#include "backends/cpu/dense_attention.h"
#include "backends/cpu/encoder_decoder_ops.h"
#include "backends/cpu/memory_bandwidth.h"
#include "backends/cpu/ops.h"
#include "common/error.h"
#include "common/progress.h"
#include "graph/fusion_passes.h"
#include "graph/memory_plan.h"
#include "quant/dequantize.h"

namespace rayo::cpu {

using graph::Graph;
using graph::Node;
using graph::Op;

namespace {
// Splits [0, n) evenly: the range of thread `ith` of `nth`.
inline std::pair<int64_t, int64_t> slice(int64_t n, int ith, int nth) {
  const int64_t per = (n + nth - 1) / nth;
  const int64_t begin = std::min(n, per * ith);
  return {begin, std::min(n, begin + per)};
}

// The kernels read a repacked copy of this weight from now on: let the kernel
// reclaim the file's pages under it, so resident memory holds one copy of the
// weights, not two. (File-backed pages: a later read, e.g. of a tied
// embedding's rows, simply faults them back in.)
void release_file_pages(const void* data, size_t bytes) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

// Below this many values of work an op runs on the calling thread alone: waking
// the pool costs more than it saves (and much more when the machine is busy).
constexpr int64_t kParallelThreshold = 32 * 1024;
// The same for matrix products, in multiply-adds: a pool run costs ~0.3 us
// while the workers spin, and a product of 128K multiply-adds (a 576 x 576
// matrix of SmolLM2) streams its weights in tens of microseconds: splitting
// such products made SmolLM2-135M's decode 15-20% faster than keeping every
// product under 1M on one thread.
constexpr int64_t kParallelMatmulThreshold = 128 * 1024;

// Floats of scratch a fused node needs for its intermediates at `rows` rows.
int64_t fused_scratch_floats(const Graph& g, const Node& n, int64_t rows) {
  if (n.op == Op::MatMul) return 0;
  int64_t floats = n.aux[0] >= 0 ? rows * g.values()[n.in[0]].cols : 0;  // the normed input
  if (n.op == Op::GateUpGlu) floats += 2 * rows * g.values()[n.out].cols;                 // gate, up
  if (n.op == Op::QkvRopeStore) floats += 2 * rows * int64_t{n.n_head_kv} * n.head_dim;  // k, v
  return floats;
}

// DenseAttention's query rows per task: their scores (32 x 1504 floats at
// Whisper's 1500 positions) stay in L2 between the two products.
constexpr int64_t kDenseBlockRows = 32;

// Whether node n reads or writes the KV cache through the step's block table.
bool uses_block_table(const Node& n) {
  return n.op == Op::KvStore || n.op == Op::Attention || n.op == Op::QkvRopeStore;
}
}  // namespace

template <typename Fn>
void CpuBackend::parallel(int64_t work, Fn&& fn) {
  if (work < kParallelThreshold || pool_.size() == 1)
    fn(0, 1);
  else
    pool_.run(fn);
}

template <typename Fn>
void CpuBackend::for_each_row(int64_t rows, int64_t work, Fn&& fn) {
  parallel(work, [&](int ith, int nth) {
    auto [begin, end] = slice(rows, ith, nth);
    for (int64_t r = begin; r < end; ++r) fn(r);
  });
}

CpuBackend::CpuBackend(int n_threads, bool progress, bool fuse)
    : progress_(progress), fuse_(fuse), pool_(n_threads), inline_pool_(1) {}
CpuBackend::~CpuBackend() = default;

std::vector<std::unique_ptr<graph::Pass>> CpuBackend::passes() const {
  if (!fuse_) return {};
  return graph::decoder_fusion_passes();
}

void CpuBackend::init_kv_cache(const graph::KvCacheConfig& config) {
  kv_.init(config);
  // Attention reads up to this many positions: a sequence's, or a cross-attention memory's.
  const int64_t longest = std::max(config.max_seq_len, config.cross_len);
  scores_.resize(sizeof(float) * longest * pool_.size());
  seq_rows_.resize(sizeof(int64_t) * longest * pool_.size());
}

void CpuBackend::copy_kv_blocks(std::span<const std::pair<int32_t, int32_t>> src_dst) {
  for (const auto& [src, dst] : src_dst) kv_.copy_block(src, dst);
}

void CpuBackend::prepare(const Graph& graph) {
  GraphState& state = graphs_[&graph];
  state.arena.resize(graph.arena_bytes(), graph::kArenaAlignment);
  prepare_matmul_weights(graph);
  size_t workspace = 0;
  int64_t fused = 0, dense = 0;
  for (const Node& n : graph.nodes()) {
    state.uses_kv = state.uses_kv || uses_block_table(n);
    if (n.op == Op::Unfold) {
      const int64_t rows = graph.max_rows(graph.values()[n.out]);
      const int64_t in_rows = n.in[0] < 0 ? graph.config().max_frames : graph.max_rows(graph.values()[n.in[0]]);
      RAYO_CHECK((in_rows + n.stride - 1) / n.stride <= rows, "unfolded ", graph.values()[n.out].name,
                 " has too few rows");
    }
    if (n.op == Op::DenseAttention) {
      const int64_t rows = graph.max_rows(graph.values()[n.out]);
      const int64_t padded = dense_padded_len(rows);
      dense = std::max(dense, dense_attention_supported(n.head_dim)
                                  ? int64_t{n.n_head} * n.head_dim * padded + pool_.size() * kDenseBlockRows * padded
                                  : rows * rows + 2 * rows * n.head_dim);
    }
    if (const std::vector<int> products = graph::matrix_weights(n); !products.empty()) {
      const int64_t rows = graph.max_rows(graph.values()[n.in[0]]);
      std::vector<const MatmulWeight*> weights;
      for (int w : products) weights.push_back(&matmul_weights_.at(graph.weights()[w].data));
      workspace = std::max(workspace, matmul_workspace_bytes(weights, rows, pool_.size()));
      fused = std::max(fused, fused_scratch_floats(graph, n, rows));
    } else if (n.op == Op::Embed) {
      const graph::Weight& w = graph.weights()[n.weight];
      if (!quant::can_dequantize(w.type))
        fail("tensor '", w.name, "' has type ", type_name(w.type), ", which rayo cannot read");
    }
    for (int w : graph::vector_weights(n)) f32_weight(graph, w);
  }
  state.workspace.resize(workspace);
  state.fused.resize(sizeof(float) * fused);
  state.dense.resize(sizeof(float) * dense);
}

// Repacking is the bulk of loading a model (every byte of the quantized weights
// is rewritten, and the new pages are first-touched): the weights not yet
// prepared are shared out to all threads, largest first, one whole weight at a
// time, so the threads finish close together.
void CpuBackend::prepare_matmul_weights(const Graph& graph) {
  std::vector<const graph::Weight*> todo;
  for (const Node& n : graph.nodes()) {
    for (int index : graph::matrix_weights(n)) {
      const graph::Weight& w = graph.weights()[index];
      if (matmul_weights_.count(w.data) ||
          std::any_of(todo.begin(), todo.end(), [&](const graph::Weight* t) { return t->data == w.data; }))
        continue;
      if (!matmul_supported(w.type))
        fail("tensor '", w.name, "' has type ", type_name(w.type), ", which the CPU backend cannot multiply");
      todo.push_back(&w);
    }
  }
  const auto bytes = [](const graph::Weight* w) { return rayo::row_bytes(w->type, w->cols) * w->rows; };
  std::sort(todo.begin(), todo.end(), [&](auto* a, auto* b) { return bytes(a) > bytes(b); });
  uint64_t total = 0;
  for (const graph::Weight* w : todo) total += bytes(w);
  Progress progress("loading", progress_ ? uint64_t{64} << 20 : UINT64_MAX);
  std::vector<MatmulWeight> prepared(todo.size());
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> done{0};
  pool_.run([&](int, int) {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < todo.size();) {
      const graph::Weight& w = *todo[i];
      prepared[i] = prepare_weight(w.type, w.data, w.rows, w.cols);
      if (prepared[i].packed && w.file_backed) release_file_pages(w.data, bytes(&w));
      progress.update(done += bytes(&w), total);
    }
  });
  for (size_t i = 0; i < todo.size(); ++i) matmul_weights_.emplace(todo[i]->data, std::move(prepared[i]));
}

bool CpuBackend::holds_matrix_copy(const void* weight_data) const {
  const auto it = matmul_weights_.find(weight_data);
  return it != matmul_weights_.end() && it->second.packed != nullptr;
}

const float* CpuBackend::f32_weight(const Graph& graph, int index) {
  const graph::Weight& w = graph.weights()[index];
  auto it = f32_weights_.find(w.data);
  if (it == f32_weights_.end()) {
    if (!quant::can_dequantize(w.type))
      fail("tensor '", w.name, "' has type ", type_name(w.type), ", which rayo cannot read");
    std::vector<float> values(static_cast<size_t>(w.rows * w.cols));
    quant::dequantize_row(w.type, w.data, values.data(), w.rows * w.cols);
    it = f32_weights_.emplace(w.data, std::move(values)).first;
  }
  return it->second.data();
}

float* CpuBackend::value(const Graph& graph, int index) {
  return reinterpret_cast<float*>(current_->arena.data() + graph.values()[index].offset);
}

int64_t CpuBackend::rows_of(const Graph& graph, int index) const {
  switch (graph.values()[index].rows) {
    case graph::RowSpace::Tokens: return static_cast<int64_t>(step_.tokens.size());
    case graph::RowSpace::Outputs: return static_cast<int64_t>(step_.output_rows.size());
    case graph::RowSpace::Frames: return step_.n_frames;
  }
  return 0;
}

void CpuBackend::begin_step(const Graph& graph, const graph::StepInputs& inputs) {
  auto it = graphs_.find(&graph);
  RAYO_CHECK(it != graphs_.end(), "graph not prepared");
  RAYO_CHECK(!kv_.empty(), "KV cache not initialised");
  const auto& kv = kv_.config();
  const size_t n = inputs.tokens.size();
  RAYO_CHECK(inputs.seq.size() == n, "one sequence index per token");
  RAYO_CHECK(inputs.positions.size() == n, "one position per token");
  RAYO_CHECK(n <= static_cast<size_t>(graph.config().max_tokens) &&
                 inputs.output_rows.size() <= static_cast<size_t>(graph.config().max_outputs) &&
                 inputs.n_frames <= graph.config().max_frames,
             "a step larger than its graph");
  current_ = &it->second;
  step_ = inputs;
  if (!it->second.uses_kv) {  // an encoder step: no block table
    store_rows_.clear();
    ring_rows_.clear();
    return;
  }
  RAYO_CHECK(inputs.max_blocks_per_seq > 0, "no block table");
  const int64_t n_seqs = static_cast<int64_t>(inputs.block_table.size()) / inputs.max_blocks_per_seq;
  for (int32_t b : inputs.block_table) RAYO_CHECK(b >= -1 && b < kv.n_blocks, "block ", b, " outside the cache");
  if (kv.ring_blocks > 0) {
    RAYO_CHECK(static_cast<int64_t>(inputs.ring_start.size()) >= n_seqs, "one ring per sequence");
    for (int64_t s = 0; s < n_seqs; ++s)
      RAYO_CHECK(inputs.ring_start[s] >= 0 && inputs.ring_start[s] + kv.ring_blocks <= kv.n_ring_blocks, "ring ",
                 inputs.ring_start[s], " outside the cache");
  }
  store_rows_.resize(n);
  ring_rows_.resize(kv.ring_blocks > 0 ? n : 0);
  for (size_t t = 0; t < n; ++t) {
    const int32_t pos = inputs.positions[t];
    if (pos < 0 || pos >= kv.max_seq_len || pos / kv.block_size >= inputs.max_blocks_per_seq)
      fail("position ", pos, " is outside the context of ", kv.max_seq_len);
    RAYO_CHECK(inputs.seq[t] >= 0 && inputs.seq[t] < n_seqs, "sequence index ", inputs.seq[t]);
    store_rows_[t] = cache_row(static_cast<int64_t>(t), pos);
    if (kv.ring_blocks > 0) ring_rows_[t] = cache_row(static_cast<int64_t>(t), pos, true);
  }
}

int64_t CpuBackend::cache_row(int64_t t, int32_t pos, bool ring) const {
  const auto& kv = kv_.config();
  const int64_t block_size = kv.block_size;
  if (ring) return (step_.ring_start[step_.seq[t]] + (pos / block_size) % kv.ring_blocks) * block_size + pos % block_size;
  const int32_t block = step_.block_table[step_.seq[t] * step_.max_blocks_per_seq + pos / block_size];
  RAYO_CHECK(block >= 0, "position ", pos, " has no cache block");
  return block * block_size + pos % block_size;
}

std::span<const float> CpuBackend::output(const Graph& graph) {
  const auto& v = graph.values()[graph.output()];
  return {value(graph, graph.output()), static_cast<size_t>(rows_of(graph, graph.output()) * v.cols)};
}

double CpuBackend::measure_memory_bandwidth() { return measure_read_bandwidth(pool_); }

void CpuBackend::run(const Graph& g, const Node& n) {
  switch (n.op) {
    case Op::Embed: return run_embed(g, n);
    case Op::MatMul: return run_matmul(g, n);
    case Op::KvStore: return run_kv_store(g, n);
    case Op::Attention: return run_attention(g, n);
    case Op::RmsNorm:
    case Op::AddBias:
    case Op::Add:
    case Op::Glu:
    case Op::Rope:
    case Op::SelectRows:
    case Op::LayerNorm:
    case Op::Gelu:
    case Op::AddPosition: return run_rows(g, n);
    case Op::Unfold: return run_unfold(g, n);
    case Op::DenseAttention: return run_dense_attention(g, n);
    case Op::CrossKvStore: return run_cross_kv_store(g, n);
    case Op::CrossAttention: return run_cross_attention(g, n);
    case Op::RmsNormMatMul:
    case Op::MatMulAdd:
    case Op::GateUpGlu:
    case Op::QkvRopeStore: return run_fused(g, n);
  }
  fail("the CPU backend has no kernel for op ", op_name(n.op));
}

void CpuBackend::run_embed(const Graph& g, const Node& n) {
  const graph::Weight& w = g.weights()[n.weight];
  float* out = value(g, n.out);
  const size_t row_bytes = rayo::row_bytes(w.type, w.cols);
  for (int32_t token : step_.tokens)
    if (token < 0 || token >= w.rows) fail("token id ", token, " is outside the vocabulary of ", w.rows);
  const int64_t n_tokens = static_cast<int64_t>(step_.tokens.size());
  for_each_row(n_tokens, n_tokens * w.cols, [&](int64_t t) {
    float* row = out + t * w.cols;
    quant::dequantize_row(w.type, static_cast<const uint8_t*>(w.data) + row_bytes * step_.tokens[t], row, w.cols);
    if (n.scale != 0.0f && n.scale != 1.0f)
      for (int64_t i = 0; i < w.cols; ++i) row[i] *= n.scale;
  });
}

void CpuBackend::run_matmul(const Graph& g, const Node& n) {
  float* out = value(g, n.out);
  multiply(g, std::span<const int>(&n.weight, 1), value(g, n.in[0]), rows_of(g, n.in[0]),
           std::span<float* const>(&out, 1));
}

void CpuBackend::multiply(const Graph& g, std::span<const int> weights, const float* x, int64_t rows,
                          std::span<float* const> outputs) {
  std::array<MatmulOutput, 3> products;
  RAYO_CHECK(weights.size() <= products.size() && weights.size() == outputs.size(), "bad product list");
  int64_t work = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const graph::Weight& w = g.weights()[weights[i]];
    products[i] = {&matmul_weights_.at(w.data), outputs[i]};
    work += w.rows * w.cols * rows;
  }
  // A small product is not worth waking the pool (see kParallelMatmulThreshold).
  ThreadPool& pool = work < kParallelMatmulThreshold ? inline_pool_ : pool_;
  matmul_many(pool, std::span<const MatmulOutput>(products.data(), weights.size()), x, rows,
              current_->workspace.data());
}

// The fused ops of graph/fusion_passes.h: the products in one pool run, the
// row ops around them as the unfused nodes would run them, in the same order
// of arithmetic, so that fused and unfused steps give identical numbers.
void CpuBackend::run_fused(const Graph& g, const Node& n) {
  const int64_t rows = rows_of(g, n.in[0]);
  const int64_t cols = g.values()[n.in[0]].cols;
  const int64_t width = g.values()[n.out].cols;
  float* scratch = current_->fused.as<float>();
  float* out = value(g, n.out);
  const float* x = value(g, n.in[0]);
  if (n.aux[0] >= 0) {  // a folded RmsNorm
    const float* w = f32_weight(g, n.aux[0]);
    float* normed = scratch;
    scratch += rows * cols;
    for_each_row(rows, rows * cols,
                 [&](int64_t r) { rms_norm_row(x + r * cols, w, normed + r * cols, cols, n.group, n.eps); });
    x = normed;
  }

  switch (n.op) {
    case Op::RmsNormMatMul:
    case Op::MatMulAdd: {
      multiply(g, std::span<const int>(&n.weight, 1), x, rows, std::span<float* const>(&out, 1));
      if (n.op == Op::MatMulAdd) {
        const float* residual = value(g, n.in[1]);
        for_each_row(rows, rows * width,
                     [&](int64_t r) { add_row(residual + r * width, out + r * width, out + r * width, width); });
      }
      return;
    }
    case Op::GateUpGlu: {
      float* gate = scratch;
      float* up = scratch + rows * width;
      const int weights[] = {n.weight, n.aux[1]};
      float* const products[] = {gate, up};
      multiply(g, weights, x, rows, products);
      for_each_row(rows, rows * width,
                   [&](int64_t r) { glu_row(n.act, gate + r * width, up + r * width, out + r * width, width); });
      return;
    }
    case Op::QkvRopeStore: {
      const int64_t kv_width = int64_t{n.n_head_kv} * n.head_dim;
      float* k = scratch;
      float* v = scratch + rows * kv_width;
      const int weights[] = {n.weight, n.aux[1], n.aux[2]};
      float* const products[] = {out, k, v};
      multiply(g, weights, x, rows, products);
      const bool biased = n.aux[3] >= 0;
      const float* bq = biased ? f32_weight(g, n.aux[3]) : nullptr;
      const float* bk = biased ? f32_weight(g, n.aux[4]) : nullptr;
      const float* bv = biased ? f32_weight(g, n.aux[5]) : nullptr;
      const float* freq_factors = n.rope.freq_factors >= 0 ? f32_weight(g, n.rope.freq_factors) : nullptr;
      for_each_row(rows, rows * (width + 2 * kv_width), [&](int64_t r) {
        float* qr = out + r * width;
        float* kr = k + r * kv_width;
        float* vr = v + r * kv_width;
        if (biased) {
          add_row(qr, bq, qr, width);
          add_row(kr, bk, kr, kv_width);
          add_row(vr, bv, vr, kv_width);
        }
        rope_row(qr, qr, n.n_head, n.head_dim, n.rope, step_.positions[r], freq_factors);
        rope_row(kr, kr, n.n_head_kv, n.head_dim, n.rope, step_.positions[r], freq_factors);
        kv_.store(n.layer, store_row(r, n.layer), kr, vr);
      });
      return;
    }
    default: break;
  }
  fail("the CPU backend has no kernel for op ", op_name(n.op));
}

// Ops that transform each row independently.
void CpuBackend::run_rows(const Graph& g, const Node& n) {
  const int64_t rows = rows_of(g, n.out);
  const int64_t cols = g.values()[n.out].cols;
  const int64_t in_cols = g.values()[n.in[0]].cols;
  const float* a = value(g, n.in[0]);
  const float* b = n.in[1] >= 0 ? value(g, n.in[1]) : nullptr;
  float* y = value(g, n.out);
  const float* w = n.weight >= 0 ? f32_weight(g, n.weight) : nullptr;
  const float* freq_factors = n.op == Op::Rope && n.rope.freq_factors >= 0 ? f32_weight(g, n.rope.freq_factors) : nullptr;
  const float* bias = n.op == Op::LayerNorm ? f32_weight(g, n.aux[0]) : nullptr;
  if (n.op == Op::AddPosition) {
    const int64_t n_positions = g.weights()[n.weight].rows;
    for (int64_t r = 0; r < rows; ++r)
      if (step_.positions[r] < 0 || step_.positions[r] >= n_positions)
        fail("position ", step_.positions[r], " is outside the model's ", n_positions, " positions");
  }
  for_each_row(rows, rows * cols, [&](int64_t r) {
    float* yr = y + r * cols;
    const float* ar = a + r * in_cols;
    switch (n.op) {
      case Op::RmsNorm: rms_norm_row(ar, w, yr, cols, n.group, n.eps); break;
      case Op::AddBias: add_row(ar, w, yr, cols); break;
      case Op::Add: add_row(ar, b + r * cols, yr, cols); break;
      case Op::Glu: glu_row(n.act, ar, b + r * cols, yr, cols); break;
      case Op::Rope: rope_row(ar, yr, n.n_head, n.head_dim, n.rope, step_.positions[r], freq_factors); break;
      case Op::SelectRows: std::memcpy(yr, a + step_.output_rows[r] * in_cols, sizeof(float) * cols); break;
      case Op::LayerNorm: layer_norm_row(ar, w, bias, yr, cols, n.eps); break;
      case Op::Gelu: gelu_row(ar, yr, cols); break;
      case Op::AddPosition: add_row(ar, w + step_.positions[r] * cols, yr, cols); break;
      default: break;
    }
  });
}

void CpuBackend::run_kv_store(const Graph& g, const Node& n) {
  const int64_t width = static_cast<int64_t>(n.n_head_kv) * n.head_dim;
  const float* k = value(g, n.in[0]);
  const float* v = value(g, n.in[1]);
  const int64_t rows = rows_of(g, n.in[0]);
  for_each_row(rows, rows * width,
               [&](int64_t t) { kv_.store(n.layer, store_row(t, n.layer), k + t * width, v + t * width); });
}

void CpuBackend::run_attention(const Graph& g, const Node& n) {
  const int64_t rows = rows_of(g, n.out);
  const int64_t width = static_cast<int64_t>(n.n_head) * n.head_dim;
  const int group = n.n_head / n.n_head_kv;
  const float* q = value(g, n.in[0]);
  float* out = value(g, n.out);
  const int64_t max_len = kv_.config().max_seq_len;
  const float scale = attention_scale(n);
  const bool ring = kv_.config().in_ring(n.layer);
  int64_t work = 0;  // positions read, times the head size
  for (int64_t t = 0; t < rows; ++t)
    work += (step_.positions[t] + 1 - first_visible(n.window, step_.positions[t])) * width;

  if (!attention_tile_supported(n.head_dim)) {
    const int64_t tasks = rows * n.n_head;
    parallel(work, [&](int ith, int nth) {
      float* scores = scores_.as<float>() + ith * max_len;
      int64_t* rows = seq_rows_.as<int64_t>() + ith * max_len;
      int64_t rows_for = -1;  // the token whose sequence rows are in `rows`
      auto [begin, end] = slice(tasks, ith, nth);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t t = task / n.n_head;
        const int h = static_cast<int>(task % n.n_head);
        const int32_t pos = step_.positions[t];
        const int32_t first = first_visible(n.window, pos);
        if (rows_for != t) {
          for (int32_t j = first; j <= pos; ++j) rows[j] = cache_row(t, j, ring);
          rows_for = t;
        }
        attention_head(kv_, n.layer, h / group, n.head_dim, scale,
                       q + t * width + static_cast<int64_t>(h) * n.head_dim, first, pos, rows, scores,
                       out + t * width + static_cast<int64_t>(h) * n.head_dim);
      }
    });
    return;
  }

  // Tiles: up to `tile_tokens` consecutive tokens of one sequence times the
  // `group` query heads of one KV head, so that about 64 queries share each
  // conversion of the cache (decode: one token, the group's heads).
  const int64_t tile_tokens = std::max(1, 64 / group);
  attention_runs_.clear();
  for (int64_t t = 0; t < rows;) {
    int64_t e = t + 1;
    while (e < rows && e - t < tile_tokens && step_.seq[e] == step_.seq[t]) ++e;
    attention_runs_.push_back({t, e});
    t = e;
  }
  const int max_queries = static_cast<int>(tile_tokens) * group;
  // Per thread: the tile's scratch (sized for the longest sequence), then its
  // query pointers, positions and first positions.
  const size_t tile_bytes =
      (attention_tile_scratch_bytes(n.head_dim, max_queries, static_cast<int32_t>(max_len - 1)) + 63) / 64 * 64;
  const size_t per_thread = (tile_bytes + max_queries * (2 * sizeof(void*) + 2 * sizeof(int32_t)) + 63) / 64 * 64;
  if (attention_scratch_.size() < per_thread * pool_.size()) attention_scratch_.resize(per_thread * pool_.size());
  const int64_t tasks = static_cast<int64_t>(attention_runs_.size()) * n.n_head_kv;
  std::atomic<int64_t> next{0};
  parallel(work, [&](int ith, int) {
    std::byte* scratch = attention_scratch_.data() + ith * per_thread;
    auto** qs = reinterpret_cast<const float**>(scratch + tile_bytes);
    auto** outs = reinterpret_cast<float**>(scratch + tile_bytes + max_queries * sizeof(void*));
    auto* pos = reinterpret_cast<int32_t*>(outs + max_queries);
    int32_t* first = pos + max_queries;
    int64_t* seq_rows = seq_rows_.as<int64_t>() + ith * max_len;
    int64_t rows_for = -1;  // the run whose sequence rows are in `seq_rows`
    for (int64_t task; (task = next.fetch_add(1, std::memory_order_relaxed)) < tasks;) {
      const int64_t run = task / n.n_head_kv;
      const int kv_head = static_cast<int>(task % n.n_head_kv);
      const auto [t0, t1] = attention_runs_[run];
      AttentionTile tile{n.layer, kv_head, n.head_dim, seq_rows, 0, qs, pos, outs, first, scale};
      int32_t last_pos = 0, first_pos = INT32_MAX;
      for (int64_t t = t0; t < t1; ++t) {
        last_pos = std::max(last_pos, step_.positions[t]);
        first_pos = std::min(first_pos, first_visible(n.window, step_.positions[t]));
        for (int h = kv_head * group; h < (kv_head + 1) * group; ++h) {
          qs[tile.n] = q + t * width + static_cast<int64_t>(h) * n.head_dim;
          outs[tile.n] = out + t * width + static_cast<int64_t>(h) * n.head_dim;
          first[tile.n] = first_visible(n.window, step_.positions[t]);
          pos[tile.n++] = step_.positions[t];
        }
      }
      if (rows_for != run) {
        for (int32_t j = first_pos; j <= last_pos; ++j) seq_rows[j] = cache_row(t0, j, ring);
        rows_for = run;
      }
      attention_tile(kv_, tile, scratch);
    }
  });
}

}  // namespace rayo::cpu

namespace rayo::cpu {

// A convolution's input, each output frame's window as one row
// (conv1d_unfold_row): the graph's next MatMul multiplies it by the weight
// [out][in][3] seen as [out][in * 3] with the matmul kernels of its format.
void CpuBackend::run_unfold(const Graph& g, const Node& n) {
  const int64_t width = g.values()[n.out].cols;
  const int64_t channels = width / 3;
  const int64_t rows = rows_of(g, n.out);
  const bool from_features = n.in[0] < 0;
  const float* in = nullptr;
  int64_t in_frames = 0;
  if (from_features) {
    RAYO_CHECK(static_cast<int64_t>(step_.features.size()) == channels * step_.n_frames, "features of ",
               step_.features.size(), " values are not ", channels, " x ", step_.n_frames, " frames");
    in = step_.features.data();
    in_frames = step_.n_frames;
  } else {
    RAYO_CHECK(g.values()[n.in[0]].cols == channels, "unfold input of the wrong width");
    in = value(g, n.in[0]);
    in_frames = rows_of(g, n.in[0]);
  }
  RAYO_CHECK((in_frames + n.stride - 1) / n.stride == rows, "unfolding ", in_frames, " frames with stride ", n.stride,
             " gives ", (in_frames + n.stride - 1) / n.stride, " frames, not ", rows);
  float* out = value(g, n.out);
  for_each_row(rows, rows * width, [&](int64_t t) {
    conv1d_unfold_row(in, channels, in_frames, from_features, t, n.stride, out + t * width);
  });
}

// Each head of each sequence as two float matrix products around a softmax:
// scores = q_h k_h^T (the head's keys copied out as a row-major matrix), then
// out_h = softmax(scores * scale) v_h (the values transposed, so that they are
// the product's weight). At Whisper's 1500 positions these products are most
// of the work, and the matmul kernels already run them near the machine's
// peak; a fused flash-style kernel would save the score matrix's memory, not
// arithmetic.
void CpuBackend::run_dense_attention(const Graph& g, const Node& n) {
  const int64_t rows = rows_of(g, n.out);
  const int64_t d = n.head_dim;
  const int64_t width = int64_t{n.n_head} * d;
  RAYO_CHECK(n.n_head_kv == n.n_head, "dense attention with grouped keys");
  const float* q = value(g, n.in[0]);
  const float* k = value(g, n.in[1]);
  const float* v = value(g, n.in[2]);
  float* out = value(g, n.out);
  const float scale = attention_scale(n);
  if (dense_attention_supported(n.head_dim)) {
    // Each head's keys packed once, then blocks of query rows of every head shared out.
    float* packed = current_->dense.as<float>();
    for (int64_t s0 = 0; s0 < rows;) {
      int64_t s1 = s0 + 1;
      while (s1 < rows && step_.seq[s1] == step_.seq[s0]) ++s1;
      const int64_t len = s1 - s0;
      const int64_t padded = dense_padded_len(len);
      float* scores = packed + int64_t{n.n_head} * d * padded;
      auto head = [&](int h) {
        const int64_t col = int64_t{h} * d;
        return DenseHead{q + s0 * width + col, k + s0 * width + col, v + s0 * width + col, out + s0 * width + col,
                         width, len, n.head_dim, scale};
      };
      const int64_t blocks = (len + kDenseBlockRows - 1) / kDenseBlockRows;
      parallel(len * width, [&](int ith, int nth) {
        auto [h0, h1] = slice(n.n_head, ith, nth);
        for (int64_t h = h0; h < h1; ++h) pack_keys_transposed(head(static_cast<int>(h)), packed + h * d * padded);
      });
      std::atomic<int64_t> next{0};
      parallel(len * len * width, [&](int ith, int) {
        for (int64_t task; (task = next.fetch_add(1, std::memory_order_relaxed)) < n.n_head * blocks;) {
          const int h = static_cast<int>(task / blocks);
          const int64_t r0 = task % blocks * kDenseBlockRows;
          dense_attention_rows(head(h), packed + h * d * padded, r0, std::min(len, r0 + kDenseBlockRows),
                               scores + ith * kDenseBlockRows * padded);
        }
      });
      s0 = s1;
    }
    return;
  }
  const int64_t max_rows = g.config().max_tokens;
  float* keys = current_->dense.as<float>();  // [len][d]
  float* values_t = keys + max_rows * d;      // [d][len]
  float* scores = values_t + max_rows * d;    // [len][len]
  for (int64_t s0 = 0; s0 < rows;) {
    int64_t s1 = s0 + 1;
    while (s1 < rows && step_.seq[s1] == step_.seq[s0]) ++s1;
    const int64_t len = s1 - s0;
    for (int h = 0; h < n.n_head; ++h) {
      const int64_t col = int64_t{h} * d;
      for (int64_t j = 0; j < len; ++j) {
        std::memcpy(keys + j * d, k + (s0 + j) * width + col, sizeof(float) * d);
        for (int64_t c = 0; c < d; ++c) values_t[c * len + j] = v[(s0 + j) * width + col + c];
      }
      const MatmulWeight key_matrix{TensorType::F32, keys, len, d, nullptr};
      matmul(pool_, key_matrix, q + s0 * width + col, len, scores, nullptr, MatmulStrides{width, len});
      for_each_row(len, len * len, [&](int64_t r) { softmax_row(scores + r * len, len, scale); });
      const MatmulWeight value_matrix{TensorType::F32, values_t, d, len, nullptr};
      matmul(pool_, value_matrix, scores, len, out + s0 * width + col, nullptr, MatmulStrides{len, width});
    }
    s0 = s1;
  }
}

int64_t CpuBackend::cross_slot(int64_t t) const {
  const int32_t s = step_.seq[t];
  const int64_t slot = step_.cross_slot.empty() ? s : step_.cross_slot[s];
  RAYO_CHECK(slot >= 0 && slot < kv_.config().n_cross_slots, "cross-attention slot ", slot, " outside the ",
             kv_.config().n_cross_slots, " slots");
  return slot;
}

void CpuBackend::run_cross_kv_store(const Graph& g, const Node& n) {
  const int64_t width = int64_t{n.n_head_kv} * n.head_dim;
  const int64_t len = kv_.config().cross_len;
  RAYO_CHECK(len > 0 && width == kv_.config().kv_width, "no cross-attention memory of width ", width);
  const float* k = value(g, n.in[0]);
  const float* v = value(g, n.in[1]);
  const int64_t rows = rows_of(g, n.in[0]);
  std::vector<int64_t>& slots = cross_slots_;
  slots.resize(rows);
  for (int64_t t = 0; t < rows; ++t) {
    RAYO_CHECK(step_.positions[t] >= 0 && step_.positions[t] < len, "encoder position ", step_.positions[t],
               " outside the cross-attention memory of ", len);
    slots[t] = cross_slot(t);
  }
  // Split by positions, so that each thread writes its own columns of the transposed keys.
  for_each_row(rows, rows * width, [&](int64_t t) {
    kv_.store_cross(n.layer, slots[t], step_.positions[t], k + t * width, v + t * width);
  });
}

// The tokens reading one slot (a sequence, or the beams of one audio window)
// attend together: per head, scores = q K^T against the slot's transposed
// keys, softmax, then times the values, in the dense attention kernel.
void CpuBackend::run_cross_attention(const Graph& g, const Node& n) {
  const int64_t rows = rows_of(g, n.out);
  const int64_t d = n.head_dim;
  const int64_t width = int64_t{n.n_head} * d;
  const int64_t len = kv_.config().cross_len;
  RAYO_CHECK(len > 0, "no cross-attention memory");
  RAYO_CHECK(n.n_head == n.n_head_kv && width == kv_.config().kv_width && dense_attention_supported(n.head_dim),
             "cross-attention of ", n.n_head, " heads of ", n.head_dim, " values is not supported on the CPU");
  const float* q = value(g, n.in[0]);
  float* out = value(g, n.out);
  const float scale = attention_scale(n);
  std::vector<int64_t>& slots = cross_slots_;
  slots.resize(rows);
  for (int64_t t = 0; t < rows; ++t) slots[t] = cross_slot(t);
  attention_runs_.clear();
  for (int64_t t = 0; t < rows;) {
    int64_t e = t + 1;
    while (e < rows && e - t < kDenseBlockRows && slots[e] == slots[t]) ++e;
    attention_runs_.push_back({t, e});
    t = e;
  }
  const int64_t padded = dense_padded_len(len);
  const size_t per_thread = sizeof(float) * kDenseBlockRows * padded;
  if (attention_scratch_.size() < per_thread * pool_.size()) attention_scratch_.resize(per_thread * pool_.size());
  const int64_t tasks = static_cast<int64_t>(attention_runs_.size()) * n.n_head;
  std::atomic<int64_t> next{0};
  parallel(rows * len * width, [&](int ith, int) {
    float* scores = reinterpret_cast<float*>(attention_scratch_.data() + ith * per_thread);
    for (int64_t task; (task = next.fetch_add(1, std::memory_order_relaxed)) < tasks;) {
      const auto [t0, t1] = attention_runs_[task / n.n_head];
      const int64_t col = task % n.n_head * d;
      const DenseHead head{q + t0 * width + col,
                           nullptr,
                           kv_.cross_values(n.layer, slots[t0]) + col,
                           out + t0 * width + col,
                           width,
                           len,
                           n.n_head_kv > 0 ? n.head_dim : 0,
                           scale};
      dense_attention_rows(head, kv_.cross_keys_transposed(n.layer, slots[t0]) + col * padded, 0, t1 - t0, scores);
    }
  });
}

}  // namespace rayo::cpu
