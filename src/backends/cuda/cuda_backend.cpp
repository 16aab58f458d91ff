#include "backends/cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "backends/cuda/activation_plan.h"
#include "backends/cuda/dense_gemm_choice.h"
#include "backends/cuda/device_sampling.h"
#include "backends/cuda/kernel_args.h"
#include "backends/cuda/kernel_cache.h"
#include "backends/cuda/kernel_specs.h"
#include "backends/cuda/module_set.h"
#include "backends/cuda/step_block.h"
#include "backends/cuda/weight_layout.h"
#include "common/error.h"
#include "graph/fusion_passes.h"
#include "quant/dequantize.h"

namespace rayo::cuda {

using graph::Graph;
using graph::Node;
using graph::Op;
using kargs::Dev;

namespace {

// One kernel launch: its function, shape and argument struct (its bytes; the
// structs of kernels/kernel_args.cuh are whole 8-byte fields). The parameter
// pointer cuLaunchKernel wants is made at each launch, so that copies of a
// Launch stay valid (the driver copies the struct at the call, also while
// capturing a graph).
struct Launch {
  CUfunction fn = nullptr;
  LaunchShape shape;
  std::vector<uint64_t> args;
  void* param = nullptr;
  void** params() {
    param = args.data();
    return &param;
  }
};

// Output rows a step may sample on the device (its scratch and penalty windows
// are sized for them); a graph with more output rows gives logits.
constexpr int64_t kMaxSampledRows = 256;

struct GraphState {
  DeviceBuffer arena;
  // The step block (step_block.h), uploaded at once each step. The table and
  // the pairs vary in length; the pairs follow the used part of the table, and
  // the records give their places relative to the block's start.
  DeviceBuffer step;
  StepBlockLayout layout;
  int64_t sample_rows = 0;
  // What the graph's nodes need of a step (graph_needs).
  bool uses_kv = false;     // the paged KV cache: a block table
  bool has_embed = false;   // token ids that must be in the vocabulary
  bool uses_cross = false;  // the cross-attention memory: a slot per sequence
  bool has_logits = false;  // its output rows are the step's outputs: logits, sampled on the device
  int64_t feature_channels = 0;  // an encoder graph's input features (an Unfold of them), per frame
  int64_t position_limit = 0;    // positions a step's rows may have (the KV cache, position tables)
  ActivationPlan plan;    // the 8-bit twins of matmul inputs (activation_plan.h)
  DeviceBuffer twins;     // their arena
  DeviceBuffer partial;   // attention split results
  DeviceBuffer counters;  // attention splits (and merge groups) finished, per (token, kv head); zero between steps
  DeviceBuffer ids;       // sampled token per output row
  DeviceBuffer scratch;   // the sampler's penalised copies of the logits
  // Dense GEMMs (dense_gemm_choice.h): a node's matrices decoded to f16, its
  // tokens as f16, and q/k/v's product before its epilogue.
  DeviceBuffer dense_w, dense_x, dense_h;
  int32_t* staging = nullptr;   // pinned copy of `step`
  float* logits = nullptr;      // pinned [max_outputs][n_vocab]
  int32_t* host_ids = nullptr;  // pinned [max_outputs]
  std::vector<std::vector<Launch>> node_launches;  // by node index
  // The attention split kernels' launches (attention.cu, a block per split on
  // the grid's y axis) and their chunks: begin_step sizes their grids from
  // the step's furthest position (size_attention_grids).
  struct SplitLaunch {
    size_t node = 0, launch = 0;
    int64_t chunk = 0, splits = 0;
  };
  std::vector<SplitLaunch> split_launches;
  Launch sample;          // the sampler, last in every step (rows without a request skip it)
  PackedSamplingRows packed;
  CUgraph cu_graph = nullptr;
  CUgraphExec exec = nullptr;
  int n_outputs = 0;
  int64_t out_rows = 0;   // rows of the output value in the last step
  bool logits_fresh = false;
  bool sampled = false;   // the last step had sample requests: host_ids holds their tokens
  int64_t n_vocab = 0;
  int kernels = 0;
};

}  // namespace

class CudaBackend : public graph::Backend {
 public:
  explicit CudaBackend(const CudaOptions& options)
      : options_(options), ctx_(options.device), cache_(ctx_.arch(), Driver::get().version()), modules_(ctx_, cache_) {
    // The tensor-core kernels use mma.sync shapes that sm_80 introduced: say so
    // now rather than fail to compile at the first prompt.
    if (ctx_.compute_capability() < 80)
      fail(ctx_.name(), " is ", ctx_.arch(), ": rayo's CUDA kernels need compute capability 8.0 or newer (Ampere, "
           "Ada, Hopper); use --device cpu");
    // Every sm_80+ GPU so far allows at least 99 KB; the GEMMs' tiles and stages need 96.
    if (ctx_.max_shared_per_block() < static_cast<int>(kGemmSharedBytes))
      fail(ctx_.name(), " allows ", ctx_.max_shared_per_block() / 1024, " KB of shared memory per block: rayo's "
           "tensor-core kernels need ", kGemmSharedBytes / 1024, " KB; use --device cpu");
    if (!Nvrtc::get().is_available()) fail(Nvrtc::get().unavailable_reason());
    ctx_.set_programmatic_launch(options.programmatic_launch);
  }

  ~CudaBackend() override {
    try {
      ctx_.make_current();  // the last step may have run on another thread
    } catch (const Error&) {
    }
    const auto& a = ctx_.api();
    for (auto& [g, s] : graphs_) {
      if (s.exec) a.cuGraphExecDestroy(s.exec);
      if (s.cu_graph) a.cuGraphDestroy(s.cu_graph);
      ctx_.free_host(s.staging);
      ctx_.free_host(s.logits);
      ctx_.free_host(s.host_ids);
    }
    graphs_.clear();
    weights_.clear();
  }

  std::string_view name() const override { return "cuda"; }
  double measure_memory_bandwidth() override {
    ctx_.make_current();
    return measure_copy_bandwidth(ctx_);
  }
  std::vector<std::unique_ptr<graph::Pass>> passes() const override { return graph::decoder_fusion_passes(); }

  void init_kv_cache(const graph::KvCacheConfig& config) override {
    ctx_.make_current();
    if (config.type != graph::KvType::F16) fail("the CUDA backend keeps the KV cache in f16 (f32 was requested)");
    RAYO_CHECK(config.n_layers > 0 && config.n_blocks > 0 && config.block_size > 0 && config.kv_width > 0 &&
                   config.max_seq_len > 0,
               "empty KV cache");
    if (kv_) {  // a new pool: only its size may change
      RAYO_CHECK(config.n_layers == kv_config_.n_layers && config.kv_width == kv_config_.kv_width &&
                     config.block_size == kv_config_.block_size && config.max_seq_len == kv_config_.max_seq_len &&
                     config.ring_blocks == kv_config_.ring_blocks && config.n_ring_blocks == kv_config_.n_ring_blocks &&
                     config.ring_layers == kv_config_.ring_layers && config.cross_len == kv_config_.cross_len &&
                     config.n_cross_slots == kv_config_.n_cross_slots,
                 "the KV cache may only change its number of blocks");
      kv_ = DeviceBuffer();  // freed before the new one is allocated
    }
    kv_config_ = config;
    // Each layer's keys then values; a layer that keeps a ring has the ring pool's blocks.
    layer_offsets_.assign(1, 0);
    for (int l = 0; l < config.n_layers; ++l)
      layer_offsets_.push_back(layer_offsets_.back() + 2 * layer_bytes(l));
    kv_ = ctx_.alloc(layer_offsets_.back());
    check(ctx_.api().cuMemsetD8(kv_.ptr(), 0, kv_.bytes()), "clear the KV cache");
    // Encoder-decoder models: each layer's cross-attention keys then values,
    // every slot's (kernels/kernel_args.cuh).
    RAYO_CHECK(config.cross_len >= 0 && config.n_cross_slots >= 0 && (config.cross_len == 0) == (config.n_cross_slots == 0),
               "a cross-attention memory of ", config.n_cross_slots, " slots of ", config.cross_len, " rows");
    if (config.cross_len > 0 && !cross_) {
      cross_ = ctx_.alloc(2 * config.n_layers * cross_bytes());
      check(ctx_.api().cuMemsetD8(cross_.ptr(), 0, cross_.bytes()), "clear the cross-attention memory");
    }
    // The launches recorded so far hold the old pool's addresses.
    for (auto& [g, s] : graphs_) record_launches(*g, s);
  }

  std::optional<graph::DeviceMemory> device_memory() const override {
    size_t free_bytes = 0, total_bytes = 0;
    check(ctx_.api().cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo");
    return graph::DeviceMemory{free_bytes, total_bytes};
  }

  void prepare(const Graph& g) override {
    ctx_.make_current();
    RAYO_CHECK(kv_, "KV cache not initialised");
    upload_weights(g);
    GraphState& s = graphs_[&g];
    const auto& cfg = g.config();
    s.arena = ctx_.alloc(std::max<size_t>(g.arena_bytes(), 256));
    s.plan = plan_activations(g);
    s.twins = ctx_.alloc(std::max<size_t>(s.plan.arena_bytes, 256));
    graph_needs(g, s);
    const int64_t blocks_per_seq = (kv_config_.max_seq_len + kv_config_.block_size - 1) / kv_config_.block_size;
    // Rows a step may sample (a prompt graph's many outputs are for logits), and
    // their penalty windows: at most the context's distinct tokens each.
    s.n_vocab = g.values()[g.output()].cols;
    s.sample_rows = s.has_logits ? std::min<int64_t>(cfg.max_outputs, kMaxSampledRows) : 0;
    s.layout.max_tokens = static_cast<size_t>(cfg.max_tokens);
    s.layout.max_outputs = static_cast<size_t>(cfg.max_outputs);
    s.layout.table_capacity = s.uses_kv ? static_cast<size_t>(std::max<int64_t>(cfg.max_tokens, 1) * blocks_per_seq) : 0;
    s.layout.pairs_capacity = static_cast<size_t>(s.sample_rows * std::min<int64_t>(kv_config_.max_seq_len, s.n_vocab));
    s.layout.feature_values = static_cast<size_t>(s.feature_channels * cfg.max_frames);
    const size_t step_bytes = s.layout.total() * sizeof(int32_t);
    s.step = ctx_.alloc(step_bytes);
    s.staging = static_cast<int32_t*>(ctx_.alloc_host(step_bytes));
    std::memset(s.staging, 0, step_bytes);
    // The output's rows come back: the logits of the outputs, or (an encoder's)
    // every row of its value, on demand.
    const int64_t out_rows = g.max_rows(g.values()[g.output()]);
    s.logits = static_cast<float*>(ctx_.alloc_host(out_rows * s.n_vocab * sizeof(float)));
    s.host_ids = static_cast<int32_t*>(ctx_.alloc_host(cfg.max_outputs * sizeof(int32_t)));
    s.ids = ctx_.alloc(cfg.max_outputs * sizeof(int32_t));
    s.scratch = ctx_.alloc(std::max<size_t>(s.sample_rows * s.n_vocab * sizeof(float), 256));
    size_t partial = 0, counters = 0;
    for (const Node& n : g.nodes())
      if (n.op == Op::Attention) {
        const int64_t splits = attention_splits(g, n);
        partial = std::max<size_t>(
            partial, cfg.max_tokens * n.n_head * splits * attention_partial_floats(n.head_dim) * sizeof(float));
        counters = std::max<size_t>(
            counters, cfg.max_tokens * n.n_head_kv * attention_merge_counters(splits) * sizeof(int32_t));
      }
    s.partial = ctx_.alloc(std::max<size_t>(partial, 256));
    s.counters = ctx_.alloc(std::max<size_t>(counters, 256));
    check(ctx_.api().cuMemsetD8(s.counters.ptr(), 0, s.counters.bytes()), "clear the attention counters");
    size_t dense_w = 0, dense_x = 0, dense_h = 0;
    for (const Node& n : g.nodes()) {
      if (!uses_dense_gemm(g, n)) continue;
      const size_t rows = static_cast<size_t>(g.max_rows(g.values()[n.in[0]]));
      size_t matrix_rows = 0, cols = 0;
      for (int w : graph::matrix_weights(n)) {
        matrix_rows += static_cast<size_t>(g.weights()[w].rows);
        cols = static_cast<size_t>(g.weights()[w].cols);
      }
      dense_w = std::max(dense_w, matrix_rows * cols * 2);
      dense_x = std::max(dense_x, rows * cols * 2);
      if (n.op == Op::QkvRopeStore) dense_h = std::max(dense_h, rows * matrix_rows * 4);
    }
    s.dense_w = ctx_.alloc(std::max<size_t>(dense_w, 256));
    s.dense_x = ctx_.alloc(std::max<size_t>(dense_x, 256));
    s.dense_h = ctx_.alloc(std::max<size_t>(dense_h, 256));
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t compiled_before = cache_.compiles();
    record_launches(g, s);
    if (options_.verbose)
      std::fprintf(stderr, "rayo: %d kernels per step on %s (%s), %llu compiled in %.2f s, %s arena\n", s.kernels,
                   ctx_.name().c_str(), ctx_.arch().c_str(),
                   static_cast<unsigned long long>(cache_.compiles() - compiled_before),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                   format_bytes(g.arena_bytes() + s.plan.arena_bytes).c_str());
    last_kernels_ = s.kernels;
  }

  void begin_step(const Graph& g, const graph::StepInputs& in) override {
    ctx_.make_current();
    auto it = graphs_.find(&g);
    RAYO_CHECK(it != graphs_.end(), "graph not prepared");
    GraphState& s = it->second;
    const auto& cfg = g.config();
    const size_t n = in.tokens.size();
    RAYO_CHECK(in.seq.size() == n && in.positions.size() == n, "one sequence index and position per token");
    RAYO_CHECK(n <= static_cast<size_t>(cfg.max_tokens) && in.output_rows.size() <= static_cast<size_t>(cfg.max_outputs) &&
                   in.n_frames >= 0 && in.n_frames <= cfg.max_frames,
               "a step larger than its graph");
    int64_t n_seqs = 0;
    if (s.uses_kv) {
      n_seqs = check_block_table(s, in);
    } else {
      for (int32_t q : in.seq) {
        RAYO_CHECK(q >= 0 && q < cfg.max_tokens, "sequence index ", q);
        n_seqs = std::max<int64_t>(n_seqs, q + 1);
      }
    }
    for (size_t t = 0; t < n; ++t)
      if (in.positions[t] < 0 || in.positions[t] >= s.position_limit)
        fail("position ", in.positions[t], " is outside the context of ", s.position_limit);
    if (s.uses_cross) check_cross_slots(s, in, n_seqs);
    if (s.has_embed)
      for (int32_t t : in.tokens)
        if (t < 0 || t >= vocab_rows_) fail("token id ", t, " is outside the vocabulary of ", vocab_rows_);
    for (int32_t r : in.output_rows)
      if (r < 0 || r >= static_cast<int32_t>(in.tokens.size())) fail("output row ", r, " is not a row of the step");
    RAYO_CHECK(s.feature_channels > 0 || in.features.empty(), "features for a graph without an encoder's input");
    if (s.feature_channels > 0) check_frames(g, s, in);
    size_attention_grids(s, in.positions);

    int32_t* p = s.staging;
    const StepBlockLayout& L = s.layout;
    p[0] = static_cast<int32_t>(n);
    p[1] = static_cast<int32_t>(in.output_rows.size());
    p[2] = in.max_blocks_per_seq;
    p[3] = 1;
    p[StepBlockLayout::kNFrames] = static_cast<int32_t>(in.n_frames);
    std::copy(in.tokens.begin(), in.tokens.end(), p + L.tokens());
    std::copy(in.positions.begin(), in.positions.end(), p + L.positions());
    std::copy(in.output_rows.begin(), in.output_rows.end(), p + L.output_rows());
    std::copy(in.seq.begin(), in.seq.end(), p + L.seq());
    if (s.uses_kv && kv_config_.ring_blocks > 0)  // checked: at most one a row
      std::copy(in.ring_start.begin(), in.ring_start.end(), p + L.ring_start());
    if (s.uses_cross && in.cross_slot.empty())  // slot s for sequence s
      std::iota(p + L.cross_slot(), p + L.cross_slot() + n_seqs, 0);
    else if (s.uses_cross)
      std::copy(in.cross_slot.begin(), in.cross_slot.begin() + n_seqs, p + L.cross_slot());
    // Sampling records (all zero, "not sampled here", without requests), then
    // the used table, then the penalty pairs at an even int offset.
    std::copy(in.block_table.begin(), in.block_table.end(), p + L.table());
    size_t end = L.table() + in.block_table.size();
    std::fill(p + L.records(), p + L.table(), 0);
    s.sampled = !in.sample.empty();
    if (s.sampled) {
      if (static_cast<int64_t>(in.sample.size()) > s.sample_rows)
        fail("a step samples at most ", s.sample_rows, " rows on the GPU, got ", in.sample.size());
      pack_sampling_rows(in.sample, s.n_vocab, s.packed);
      const size_t pairs_at = L.pairs(in.block_table.size());
      if (s.packed.pairs.size() / 2 > L.pairs_capacity)
        fail("the penalty windows hold ", s.packed.pairs.size() / 2, " tokens, more than the ", L.pairs_capacity,
             " this graph was prepared for");
      for (size_t r = 0; r < in.sample.size(); ++r)  // pair offsets relative to the block's start
        s.packed.records[r * kSampleRecordInts + kSampleRecordPenaltyOffset] += static_cast<int32_t>(pairs_at / 2);
      std::copy(s.packed.records.begin(), s.packed.records.end(), p + L.records());
      std::copy(s.packed.pairs.begin(), s.packed.pairs.end(), p + pairs_at);
      end = pairs_at + s.packed.pairs.size();
    }
    if (!in.features.empty()) {  // an encoder step's input, in the same upload
      std::memcpy(p + L.features(), in.features.data(), in.features.size() * sizeof(float));
      end = L.features() + in.features.size();
    }
    // One upload: the header, the per-token arrays, the records, the used
    // table and the pairs (or the features).
    ctx_.upload_async(s.step.ptr(), s.staging, end * sizeof(int32_t));
    s.n_outputs = static_cast<int>(in.output_rows.size());
    s.out_rows = step_rows(g.values()[g.output()].rows, in);
    s.logits_fresh = false;
    current_ = &s;
  }

  void run(const Graph& g, const Node& node) override {
    if (options_.use_graphs) return;  // the whole step is one graph launch in end_step
    const size_t index = static_cast<size_t>(&node - g.nodes().data());
    RAYO_CHECK(index < current_->node_launches.size(), "node not of the prepared graph");
    for (Launch& l : current_->node_launches[index])
      launch(l);
  }

  void end_step(const Graph& g) override {
    ctx_.make_current();
    GraphState& s = *current_;
    if (options_.use_graphs) {
      if (!s.exec) capture(s);
      ctx_.launch_graph(s.exec);
    } else if (s.has_logits) {
      launch(s.sample);
    }
    if (s.sampled) {
      // The ids; logits only if a row needs the host (output(), on demand).
      ctx_.download_async(s.host_ids, s.ids.ptr(), s.n_outputs * sizeof(int32_t));
    } else if (s.has_logits) {
      ctx_.download_async(s.logits, value_ptr(s, g, g.output()), output_bytes(s));
      s.logits_fresh = true;
    }
    // An encoder step's output stays on the device (output() brings it back on demand).
    ctx_.synchronize();
  }

  std::span<const float> output(const Graph& g) override {
    ctx_.make_current();
    GraphState& s = graphs_.at(&g);
    if (!s.logits_fresh) {  // a sampled step or an encoder's: its output only when asked for
      ctx_.download_async(s.logits, value_ptr(s, g, g.output()), output_bytes(s));
      ctx_.synchronize();
      s.logits_fresh = true;
    }
    return {s.logits, static_cast<size_t>(s.out_rows * s.n_vocab)};
  }

  void copy_kv_blocks(std::span<const std::pair<int32_t, int32_t>> src_dst) override {
    ctx_.make_current();
    const size_t block = static_cast<size_t>(kv_config_.block_size * kv_config_.kv_width) * 2;
    for (const auto& [src, dst] : src_dst) {
      RAYO_CHECK(src >= 0 && src < kv_config_.n_blocks && dst >= 0 && dst < kv_config_.n_blocks, "copy of block ",
                 src, " to ", dst, " outside the cache");
      for (int l = 0; l < kv_config_.n_layers; ++l) {
        if (kv_config_.in_ring(l)) continue;  // rings are not forked
        for (CUdeviceptr base : {k_cache(l), v_cache(l)})
          check(ctx_.api().cuMemcpyDtoDAsync(base + dst * block, base + src * block, block, ctx_.stream()),
                "copy a KV cache block");
      }
    }
  }

  // Extras (cuda_backend.h).
  CudaBackendInfo info() const {
    CudaBackendInfo i;
    i.device_name = ctx_.name();
    i.arch = ctx_.arch();
    i.stats = ctx_.stats();
    i.kernels_compiled = cache_.compiles();
    i.kernel_cache_hits = cache_.hits();
    i.kernel_cache_misses = cache_.misses();
    i.kernels_from_disk = cache_.disk_hits();
    i.kernel_compile_seconds = cache_.compile_seconds();
    i.kernels_per_step = last_kernels_;
    i.programmatic_launch = ctx_.programmatic_launch();
    return i;
  }
  int kernels_of(const Graph& g) const {
    auto it = graphs_.find(&g);
    RAYO_CHECK(it != graphs_.end(), "graph not prepared");
    return it->second.kernels;
  }
  bool samples(float temperature, int top_k, float top_p, float min_p) const override {
    return device_can_sample(temperature, top_k, top_p, min_p);
  }
  std::span<const int32_t> sampled(const Graph& g) override {
    ctx_.make_current();
    GraphState& s = graphs_.at(&g);
    if (!s.sampled) return {};
    return {s.host_ids, static_cast<size_t>(s.n_outputs)};
  }

 private:
  struct DeviceWeight {
    DeviceBuffer buffer;
    TensorType type;  // as the kernels read it (F16 for dequantized weights, F32 for vectors)
  };
  // How a weight is held on the device: the file's rows (embedding lookups,
  // float matrices), the GPU layout of a quantized matrix (weight_layout.h),
  // f16 rows of a quantized matrix on the float path, or f32 values (vectors).
  enum class WeightUse { Raw, Layout, F16, Vector };

  // The use of matrix w of matmul node n.
  static WeightUse matrix_use(const Graph& g, const Node& n, int w) {
    const TensorType t = matmul_weight_type(g, n, w);
    if (t == g.weights()[w].type) return has_gpu_layout(t) ? WeightUse::Layout : WeightUse::Raw;
    return WeightUse::F16;
  }

  // Uploads every weight the graph uses that is not on the device yet.
  void upload_weights(const Graph& g) {
    std::vector<std::pair<int, WeightUse>> needed;
    for (const Node& n : g.nodes()) {
      if (n.op == Op::Embed) {
        needed.push_back({n.weight, WeightUse::Raw});
        vocab_rows_ = g.weights()[n.weight].rows;
      }
      for (int w : graph::matrix_weights(n)) needed.push_back({w, matrix_use(g, n, w)});
      for (int w : graph::vector_weights(n)) needed.push_back({w, WeightUse::Vector});
    }
    uint64_t total = 0;
    std::vector<std::pair<int, WeightUse>> todo;
    std::set<std::pair<const void*, int>> planned;
    for (auto& [w, use] : needed) {
      const auto key = std::make_pair(g.weights()[w].data, static_cast<int>(use));
      if (weights_.count(key) || !planned.insert(key).second) continue;
      todo.push_back({w, use});
      const auto& wt = g.weights()[w];
      total += use == WeightUse::Vector ? wt.rows * wt.cols * 4
               : use == WeightUse::F16  ? wt.rows * wt.cols * 2
                                        : row_bytes(wt.type, wt.cols) * wt.rows;
    }
    if (todo.empty()) return;
    const auto t0 = std::chrono::steady_clock::now();
    if (options_.progress)
      std::fprintf(stderr, "rayo: uploading %s of weights to %s...", format_bytes(total).c_str(), ctx_.name().c_str());
    for (auto& [w, use] : todo) upload_weight(g.weights()[w], use);
    ctx_.synchronize();
    if (options_.progress)
      std::fprintf(stderr, " done in %.1f s\n",
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  void upload_weight(const graph::Weight& w, WeightUse use) {
    DeviceWeight dw;
    dw.type = w.type;
    if (use == WeightUse::Vector) {
      if (!quant::can_dequantize(w.type))
        fail("tensor '", w.name, "' has type ", type_name(w.type), ", which rayo cannot read");
      std::vector<float> values(static_cast<size_t>(w.rows * w.cols));
      quant::dequantize_row(w.type, w.data, values.data(), w.rows * w.cols);
      dw.buffer = ctx_.alloc(values.size() * sizeof(float));
      ctx_.upload(dw.buffer.ptr(), values.data(), values.size() * sizeof(float));
      dw.type = TensorType::F32;
    } else if (use == WeightUse::Layout) {
      dw.buffer = upload_layout(w);
    } else {
      const size_t bytes = row_bytes(w.type, w.cols) * w.rows;
      DeviceBuffer raw = ctx_.alloc(bytes);
      ctx_.upload(raw.ptr(), w.data, bytes);
      if (use == WeightUse::F16) {
        // Dequantize to f16 once, on the device.
        DeviceBuffer f16 = ctx_.alloc(static_cast<size_t>(w.rows * w.cols) * 2);
        Launch l = make_launch(dequant_spec(w.type, w.cols, {}, "dequant_f16"), 0,
                               kargs::DequantArgs{.w = Dev{raw.ptr()}, .out = Dev{f16.ptr()}, .rows = w.rows});
        launch(l);
        ctx_.synchronize();
        raw = std::move(f16);
        dw.type = TensorType::F16;
      }
      dw.buffer = std::move(raw);
    }
    weights_[{w.data, static_cast<int>(use)}] = std::move(dw);
  }

  // A quantized matrix in its GPU layout: rows split into planes on the host, a
  // few MiB at a time, each plane's part copied to its place.
  DeviceBuffer upload_layout(const graph::Weight& w) {
    const WeightLayout layout = gpu_layout(w.type, w.rows, w.cols);
    DeviceBuffer buffer = ctx_.alloc(layout.bytes);
    const size_t file_row = row_bytes(w.type, w.cols);
    const int64_t chunk = std::max<int64_t>(1, static_cast<int64_t>((size_t{16} << 20) / file_row));
    std::vector<uint8_t> staging(static_cast<size_t>(std::min(chunk, w.rows)) * file_row);
    for (int64_t r = 0; r < w.rows; r += chunk) {
      const int64_t n = std::min(chunk, w.rows - r);
      split_rows(layout, static_cast<const uint8_t*>(w.data) + r * file_row, n, staging.data());
      size_t at = 0;
      for (size_t p = 0; p < layout.planes.size(); ++p) {
        const size_t bytes = static_cast<size_t>(n * blocks_per_row(layout)) * layout.planes[p].bytes;
        ctx_.upload(buffer.ptr() + plane_row_offset(layout, static_cast<int>(p), r), staging.data() + at, bytes);
        at += bytes;
      }
    }
    return buffer;
  }

  CUdeviceptr weight_ptr(const Graph& g, int index, WeightUse use) const {
    if (index < 0) return 0;
    return weights_.at({g.weights()[index].data, static_cast<int>(use)}).buffer.ptr();
  }

  static CUdeviceptr value_ptr(const GraphState& s, const Graph& g, int v) {
    return v < 0 ? 0 : s.arena.ptr() + g.values()[v].offset;
  }
  // Pointers into the step block (step_block.h).
  static CUdeviceptr step_at(const GraphState& s, size_t ints) { return s.step.ptr() + 4 * ints; }
  static CUdeviceptr n_tokens_ptr(const GraphState& s) { return step_at(s, 0); }
  static CUdeviceptr n_outputs_ptr(const GraphState& s) { return step_at(s, 1); }
  static CUdeviceptr max_blocks_ptr(const GraphState& s) { return step_at(s, 2); }
  static CUdeviceptr one_ptr(const GraphState& s) { return step_at(s, 3); }  // the ring table's row length
  static CUdeviceptr n_frames_ptr(const GraphState& s) { return step_at(s, StepBlockLayout::kNFrames); }
  static CUdeviceptr tokens_ptr(const GraphState& s) { return step_at(s, s.layout.tokens()); }
  static CUdeviceptr positions_ptr(const GraphState& s) { return step_at(s, s.layout.positions()); }
  static CUdeviceptr rows_ptr(const GraphState& s) { return step_at(s, s.layout.output_rows()); }
  static CUdeviceptr seq_ptr(const GraphState& s) { return step_at(s, s.layout.seq()); }
  static CUdeviceptr ring_ptr(const GraphState& s) { return step_at(s, s.layout.ring_start()); }
  static CUdeviceptr cross_slot_ptr(const GraphState& s) { return step_at(s, s.layout.cross_slot()); }
  static CUdeviceptr table_ptr(const GraphState& s) { return step_at(s, s.layout.table()); }
  static CUdeviceptr features_ptr(const GraphState& s) { return step_at(s, s.layout.features()); }
  // The step's row count of a value's rows.
  static CUdeviceptr n_rows_ptr(const GraphState& s, const Graph& g, int value) {
    switch (g.values()[value].rows) {
      case graph::RowSpace::Tokens: return n_tokens_ptr(s);
      case graph::RowSpace::Outputs: return n_outputs_ptr(s);
      case graph::RowSpace::Frames: return n_frames_ptr(s);
    }
    return n_tokens_ptr(s);
  }
  static int64_t step_rows(graph::RowSpace rows, const graph::StepInputs& in) {
    switch (rows) {
      case graph::RowSpace::Tokens: return static_cast<int64_t>(in.tokens.size());
      case graph::RowSpace::Outputs: return static_cast<int64_t>(in.output_rows.size());
      case graph::RowSpace::Frames: return in.n_frames;
    }
    return 0;
  }
  static size_t output_bytes(const GraphState& s) {
    return static_cast<size_t>(s.out_rows * s.n_vocab) * sizeof(float);
  }
  // Bytes of one layer's keys (or values).
  size_t layer_bytes(int layer) const {
    return static_cast<size_t>(kv_config_.blocks_of(layer) * kv_config_.block_size * kv_config_.kv_width) * 2;
  }
  CUdeviceptr k_cache(int layer) const { return kv_.ptr() + layer_offsets_[layer]; }
  CUdeviceptr v_cache(int layer) const { return kv_.ptr() + layer_offsets_[layer] + layer_bytes(layer); }
  // Bytes of one layer's cross-attention keys (or values), every slot's.
  size_t cross_bytes() const {
    return static_cast<size_t>(kv_config_.n_cross_slots * kv_config_.cross_len * kv_config_.kv_width) * 2;
  }
  CUdeviceptr cross_k(int layer) const { return cross_.ptr() + 2 * static_cast<size_t>(layer) * cross_bytes(); }
  CUdeviceptr cross_v(int layer) const { return cross_k(layer) + cross_bytes(); }

  // What graph g's steps need of the step block and the caches (GraphState's
  // flags); refuses a graph this backend's caches cannot run.
  void graph_needs(const Graph& g, GraphState& s) const {
    s.position_limit = std::numeric_limits<int32_t>::max();
    for (const Node& n : g.nodes()) {
      switch (n.op) {
        case Op::KvStore:
        case Op::Attention:
        case Op::QkvRopeStore:
          s.uses_kv = true;
          s.position_limit = std::min(s.position_limit, kv_config_.max_seq_len);
          break;
        case Op::Embed: s.has_embed = true; break;
        case Op::AddPosition: s.position_limit = std::min(s.position_limit, g.weights()[n.weight].rows); break;
        case Op::CrossKvStore:
        case Op::CrossAttention:
          if (kv_config_.cross_len == 0) fail("a graph with cross-attention, but the cache has no cross-attention memory");
          RAYO_CHECK(int64_t{n.n_head} * n.head_dim == kv_config_.kv_width, "cross-attention of ", n.n_head, " x ",
                     n.head_dim, " values in a memory of rows of ", kv_config_.kv_width);
          s.uses_cross = true;
          if (n.op == Op::CrossKvStore) s.position_limit = std::min(s.position_limit, kv_config_.cross_len);
          break;
        case Op::Unfold:
          if (n.in[0] < 0) {  // the step's features
            const int64_t channels = g.values()[n.out].cols / 3;
            RAYO_CHECK(s.feature_channels == 0 || s.feature_channels == channels, "two unfoldings of the features");
            s.feature_channels = channels;
          }
          break;
        default: break;
      }
    }
    s.has_logits = g.values()[g.output()].rows == graph::RowSpace::Outputs;
  }

  // The block table's checks (graph/backend.h); returns its sequences.
  int64_t check_block_table(const GraphState& s, const graph::StepInputs& in) const {
    RAYO_CHECK(in.max_blocks_per_seq > 0, "no block table");
    if (kv_config_.ring_blocks > 0) {
      RAYO_CHECK(in.ring_start.size() >= static_cast<size_t>(in.block_table.size() / in.max_blocks_per_seq) &&
                     in.ring_start.size() <= s.layout.max_tokens,
                 "one ring per sequence");
      for (int32_t r : in.ring_start)
        RAYO_CHECK(r >= 0 && r + kv_config_.ring_blocks <= kv_config_.n_ring_blocks, "ring ", r, " outside the cache");
    }
    if (in.block_table.size() > s.layout.table_capacity)
      fail("the block table has ", in.block_table.size(), " entries, more than the ", s.layout.table_capacity,
           " this graph was prepared for");
    const int64_t n_seqs = static_cast<int64_t>(in.block_table.size()) / in.max_blocks_per_seq;
    for (int32_t b : in.block_table) RAYO_CHECK(b >= -1 && b < kv_config_.n_blocks, "block ", b, " outside the cache");
    for (size_t t = 0; t < in.tokens.size(); ++t) {
      const int32_t pos = in.positions[t];
      if (pos < 0 || pos >= kv_config_.max_seq_len || pos / kv_config_.block_size >= in.max_blocks_per_seq)
        fail("position ", pos, " is outside the context of ", kv_config_.max_seq_len);
      RAYO_CHECK(in.seq[t] >= 0 && in.seq[t] < n_seqs, "sequence index ", in.seq[t]);
      for (int64_t b = 0; b <= pos / kv_config_.block_size; ++b)  // every block attention will read
        RAYO_CHECK(in.block_table[in.seq[t] * in.max_blocks_per_seq + b] >= 0, "position ", pos, " has no cache block");
    }
    return n_seqs;
  }

  // Each of the step's n_seqs sequences has a slot of the cross-attention memory.
  void check_cross_slots(const GraphState& s, const graph::StepInputs& in, int64_t n_seqs) const {
    RAYO_CHECK(n_seqs <= static_cast<int64_t>(s.layout.max_tokens), n_seqs, " sequences in a step of ",
               s.layout.max_tokens, " rows");
    if (in.cross_slot.empty()) {
      if (n_seqs > kv_config_.n_cross_slots)
        fail("sequence ", n_seqs - 1, " has no cross-attention slot (", kv_config_.n_cross_slots, " slots)");
      return;
    }
    RAYO_CHECK(static_cast<int64_t>(in.cross_slot.size()) >= n_seqs, "one cross-attention slot per sequence");
    for (int64_t q = 0; q < n_seqs; ++q)
      if (in.cross_slot[q] < 0 || in.cross_slot[q] >= kv_config_.n_cross_slots)
        fail("cross-attention slot ", in.cross_slot[q], " outside the ", kv_config_.n_cross_slots, " slots");
  }

  // An encoder step's features, and the frames each unfolding leaves.
  static void check_frames(const Graph& g, const GraphState& s, const graph::StepInputs& in) {
    if (static_cast<int64_t>(in.features.size()) != s.feature_channels * in.n_frames)
      fail("features of ", in.features.size(), " values are not ", s.feature_channels, " x ", in.n_frames, " frames");
    for (const Node& n : g.nodes()) {
      if (n.op != Op::Unfold) continue;
      const int64_t in_rows = n.in[0] < 0 ? in.n_frames : step_rows(g.values()[n.in[0]].rows, in);
      const int64_t out_rows = step_rows(g.values()[n.out].rows, in);
      if ((in_rows + n.stride - 1) / n.stride != out_rows)
        fail("unfolding ", in_rows, " frames with stride ", n.stride, " gives ", (in_rows + n.stride - 1) / n.stride,
             " rows, not ", out_rows);
    }
  }

  // Splits of an attention node's context (its kernels' N_SPLITS).
  int64_t attention_splits(const Graph& g, const Node& n) const {
    const int chunk = graph_attention_chunk(g, n, kv_config_.max_seq_len);
    return (kv_config_.max_seq_len + chunk - 1) / chunk;
  }

  // The attention split kernels' grids for a step whose rows reach position
  // `furthest`: a block per split up to its split, rounded up to a power of
  // two (at most the context's splits), and never fewer than before, so a
  // graph is captured again at most log2(splits) + 1 times in its life. The
  // spec's grid has a block per split of the whole context, and blocks past
  // a row's last split only leave, but they are launched: 8 192 a layer for
  // a 128K context at 8 kv heads, a decode step's worth of kernels in waves
  // of empty blocks.
  void size_attention_grids(GraphState& s, std::span<const int32_t> positions) {
    if (s.split_launches.empty() || positions.empty()) return;
    const int64_t furthest = *std::max_element(positions.begin(), positions.end());
    bool grown = false;
    for (const GraphState::SplitLaunch& sl : s.split_launches) {
      int64_t blocks = 1;
      while (blocks < furthest / sl.chunk + 1) blocks *= 2;
      blocks = std::min(blocks, sl.splits);
      unsigned& grid = s.node_launches[sl.node][sl.launch].shape.grid[1];
      if (static_cast<unsigned>(blocks) > grid) {
        grid = static_cast<unsigned>(blocks);
        grown = true;
      }
    }
    if (grown) drop_capture(s);  // end_step captures the launches again
  }

  void drop_capture(GraphState& s) {
    const auto& a = ctx_.api();
    if (s.exec) a.cuGraphExecDestroy(s.exec);
    if (s.cu_graph) a.cuGraphDestroy(s.cu_graph);
    s.exec = nullptr;
    s.cu_graph = nullptr;
  }

  void launch(Launch& l) {
    ctx_.launch(l.fn, l.shape.grid[0], l.shape.grid[1], l.shape.grid[2], l.shape.block, l.params(), l.shape.shared);
  }

  // The launch of spec's kernel for a step of up to token_rows rows, with its
  // argument struct.
  template <typename Args>
  Launch make_launch(const KernelSpec& spec, int64_t token_rows, const Args& args) {
    static_assert(sizeof(Args) % 8 == 0, "kernel argument structs are whole 8-byte fields");
    const CachedKernel& k = cache_.get(spec);
    if (options_.verbose && k.compile_seconds > 0) {
      for (const auto& i : k.info)
        if (i.name == spec.entry)
          std::fprintf(stderr, "rayo: compiled %s: %d registers, %d B spilled, %.2f s\n", spec.key().c_str(),
                       i.registers, i.spill_stores, k.compile_seconds);
    }
    Launch l;
    l.fn = kernel_function(k, spec, spec.entry.c_str());
    l.shape = spec.launch(token_rows);
    l.args.resize(sizeof(Args) / 8);
    std::memcpy(l.args.data(), &args, sizeof(Args));
    return l;
  }

  // A twin's parts (null when absent or t < 0), and the norm weight it is quantized with.
  struct TwinPtrs {
    kargs::TwinIn in() const { return {.q = Dev{q}, .ds = Dev{ds}, .ss = Dev{ss}}; }
    kargs::TwinOut out() const { return {.q = Dev{q}, .ds = Dev{ds}, .ss = Dev{ss}}; }
    CUdeviceptr q = 0, ds = 0, ss = 0, norm_w = 0;
  };
  TwinPtrs twin_ptrs(const Graph& g, const GraphState& s, int t) const {
    if (t < 0) return {};
    const Twin& tw = s.plan.twins[static_cast<size_t>(t)];
    TwinPtrs p;
    if (tw.q8) p.q = s.twins.ptr() + tw.q_offset, p.ds = s.twins.ptr() + tw.ds_offset;
    if (tw.ss) p.ss = s.twins.ptr() + tw.ss_offset;
    p.norm_w = weight_ptr(g, tw.norm_weight, WeightUse::Vector);
    return p;
  }

  // Where layer `layer`'s kernels find a row's place in the KV cache; a layer
  // that keeps a ring finds it through ring_start (one entry a sequence).
  kargs::KvPlaces kv_places(const GraphState& s, int layer) const {
    const bool ring = kv_config_.in_ring(layer);
    return {.positions = Dev{positions_ptr(s)},
            .seq = Dev{seq_ptr(s)},
            .block_table = Dev{ring ? ring_ptr(s) : table_ptr(s)},
            .max_blocks = Dev{ring ? one_ptr(s) : max_blocks_ptr(s)}};
  }

  // The launches of a matmul node that runs as a dense GEMM (dense_gemm_choice.h),
  // in the order of its specs (kernel_specs.cpp: dense_node_specs): its tokens
  // to f16, each matrix decoded into dense_w one after another (gate and up
  // into one interleave), the GEMM (into the output, or dense_h for q/k/v),
  // q/k/v's epilogue.
  std::vector<Launch> dense_launches(const Graph& g, GraphState& s, const Node& n, const std::vector<KernelSpec>& specs) {
    auto V = [&](int v) { return Dev{value_ptr(s, g, v)}; };
    auto Vec = [&](int w) { return Dev{weight_ptr(g, w, WeightUse::Vector)}; };
    const int64_t rows = g.max_rows(g.values()[n.out]);
    const Dev nr{n_rows_ptr(s, g, n.out)};
    const Dev w16{s.dense_w.ptr()}, x16{s.dense_x.ptr()}, h{s.dense_h.ptr()};
    std::vector<Launch> launches;
    size_t next = 0;
    launches.push_back(make_launch(specs.at(next++), rows,
                                   kargs::HalfRowsArgs{.x = V(n.in[0]), .norm_w = Vec(n.aux[0]), .y = x16, .n_rows = nr}));
    size_t at = 0;
    for (int w : graph::matrix_weights(n)) {
      const graph::Weight& m = g.weights()[w];
      launches.push_back(make_launch(specs.at(next++), 0,
                                     kargs::DequantArgs{.w = Dev{weight_ptr(g, w, matrix_use(g, n, w))},
                                                        .out = Dev{s.dense_w.ptr() + at},
                                                        .rows = m.rows}));
      if (n.op != Op::GateUpGlu) at += static_cast<size_t>(m.rows * m.cols) * 2;
    }
    const bool qkv = n.op == Op::QkvRopeStore;
    launches.push_back(make_launch(specs.at(next++), rows,
                                   kargs::DenseGemmArgs{.w = w16,
                                                        .x = x16,
                                                        .y = qkv ? h : V(n.out),
                                                        .add = n.op == Op::MatMulAdd ? V(n.in[1]) : Dev{},
                                                        .n_rows = nr}));
    if (qkv) {
      launches.push_back(make_launch(specs.at(next++), rows,
                                     kargs::QkvArgs{.bq = Vec(n.aux[3]),
                                                    .bk = Vec(n.aux[4]),
                                                    .bv = Vec(n.aux[5]),
                                                    .x = h,
                                                    .freq_factors = Vec(n.rope.freq_factors),
                                                    .q_out = V(n.out),
                                                    .k_cache = Dev{k_cache(n.layer)},
                                                    .v_cache = Dev{v_cache(n.layer)},
                                                    .kv = kv_places(s, n.layer),
                                                    .n_rows = nr}));
    }
    RAYO_CHECK(next == specs.size(), "a dense GEMM node's launches and its kernel specs");
    return launches;
  }

  std::vector<Launch> launches_for(const Graph& g, GraphState& s, const Node& n) {
    const int index = static_cast<int>(&n - g.nodes().data());
    const auto specs = node_kernel_specs(g, n, kv_shape(kv_config_), s.plan);
    if (uses_dense_gemm(g, n)) return dense_launches(g, s, n, specs);
    const auto& values = g.values();
    auto V = [&](int v) { return Dev{value_ptr(s, g, v)}; };
    const int64_t rows = n.out >= 0 ? g.max_rows(values[n.out]) : g.config().max_tokens;
    const Dev nr{n.out >= 0 ? n_rows_ptr(s, g, n.out) : n_tokens_ptr(s)};
    const kargs::KvPlaces kv = kv_places(s, n.layer);
    auto M = [&](int w) { return Dev{weight_ptr(g, w, matrix_use(g, n, w))}; };
    auto Vec = [&](int w) { return Dev{weight_ptr(g, w, WeightUse::Vector)}; };
    const TwinPtrs in = twin_ptrs(g, s, s.plan.input_twin[static_cast<size_t>(index)]);
    const TwinPtrs out = twin_ptrs(g, s, s.plan.emits[static_cast<size_t>(index)]);

    // Twins no producer writes: a quantize launch each, first.
    std::vector<Launch> launches;
    size_t next_spec = 0;
    for (int t : s.plan.quantize_before[static_cast<size_t>(index)]) {
      const Twin& tw = s.plan.twins[static_cast<size_t>(t)];
      const TwinPtrs p = twin_ptrs(g, s, t);
      launches.push_back(make_launch(specs[next_spec++], tw.max_rows,
                                     kargs::QuantizeArgs{.x = V(tw.value),
                                                         .norm_w = Dev{p.norm_w},
                                                         .yt = p.out(),
                                                         .n_rows = Dev{n_rows_ptr(s, g, tw.value)}}));
    }
    const KernelSpec& spec = specs.at(next_spec);
    auto add = [&](Launch l) {
      launches.push_back(std::move(l));
      return launches;
    };
    // Fields are named (designated initializers): the compiler checks each
    // name and the order against kernels/kernel_args.cuh.
    switch (n.op) {
      case Op::Embed:
        return add(make_launch(spec, rows,
                               kargs::EmbedArgs{.w = Dev{weight_ptr(g, n.weight, WeightUse::Raw)},
                                                .tokens = Dev{tokens_ptr(s)},
                                                .y = V(n.out),
                                                .norm_w = Dev{out.norm_w},
                                                .yt = out.out(),
                                                .n_rows = nr}));
      case Op::MatMul:
      case Op::RmsNormMatMul:
      case Op::MatMulAdd:
        return add(make_launch(spec, rows,
                               kargs::MatmulArgs{.w = M(n.weight),
                                                 .x = V(n.in[0]),
                                                 .xt = in.in(),
                                                 .norm_w = Vec(n.aux[0]),
                                                 .y = V(n.out),
                                                 .epi = n.op == Op::MatMulAdd ? V(n.in[1]) : Dev{},
                                                 .yt = out.out(),
                                                 .y_norm_w = Dev{out.norm_w},
                                                 .n_rows = nr}));
      case Op::RmsNorm:  // b: the norm's weight
      case Op::AddBias:  // b: the bias
        return add(
            make_launch(spec, rows, kargs::RowsArgs{.a = V(n.in[0]), .b = Vec(n.weight), .y = V(n.out), .n_rows = nr}));
      case Op::Add:
      case Op::Glu:
        return add(
            make_launch(spec, rows, kargs::RowsArgs{.a = V(n.in[0]), .b = V(n.in[1]), .y = V(n.out), .n_rows = nr}));
      case Op::SelectRows:
        return add(make_launch(spec, rows,
                               kargs::SelectRowsArgs{.x = V(n.in[0]),
                                                     .y = V(n.out),
                                                     .rows = Dev{rows_ptr(s)},
                                                     .norm_w = Dev{out.norm_w},
                                                     .yt = out.out(),
                                                     .n_rows = nr}));
      case Op::Rope:
        return add(make_launch(spec, rows,
                               kargs::RopeArgs{.x = V(n.in[0]),
                                               .y = V(n.out),
                                               .freq_factors = Vec(n.rope.freq_factors),
                                               .positions = kv.positions,
                                               .n_rows = nr}));
      case Op::KvStore:
        return add(make_launch(spec, rows,
                               kargs::KvStoreArgs{.k = V(n.in[0]),
                                                  .v = V(n.in[1]),
                                                  .k_cache = Dev{k_cache(n.layer)},
                                                  .v_cache = Dev{v_cache(n.layer)},
                                                  .kv = kv,
                                                  .n_rows = nr}));
      case Op::Attention: {
        const kargs::AttentionArgs args{.q = V(n.in[0]),
                                        .k_cache = Dev{k_cache(n.layer)},
                                        .v_cache = Dev{v_cache(n.layer)},
                                        .partial = Dev{s.partial.ptr()},
                                        .counters = Dev{s.counters.ptr()},
                                        .out = V(n.out),
                                        .out_q = Dev{out.q},
                                        .out_ds = Dev{out.ds},
                                        .kv = kv,
                                        .n_rows = nr};
        // Its grid starts at a block per (kv head, row): begin_step grows it.
        s.split_launches.push_back({static_cast<size_t>(index), launches.size(), spec.int_define("CHUNK"),
                                    spec.int_define("N_SPLITS")});
        Launch split = make_launch(spec, rows, args);
        split.shape.grid[1] = 1;
        add(std::move(split));
        if (specs.size() == next_spec + 1) return launches;
        // Prompt graphs: one-sequence tiles of rows on tensor cores (the split kernel skips them).
        return add(make_launch(specs.at(next_spec + 1), rows, args));
      }
      case Op::GateUpGlu:
        return add(make_launch(spec, rows,
                               kargs::GateUpArgs{.gate = M(n.weight),
                                                 .up = M(n.aux[1]),
                                                 .x = V(n.in[0]),
                                                 .xt = in.in(),
                                                 .norm_w = Vec(n.aux[0]),
                                                 .y = V(n.out),
                                                 .yt = out.out(),
                                                 .n_rows = nr}));
      case Op::QkvRopeStore:
        return add(make_launch(spec, rows,
                               kargs::QkvArgs{.wq = M(n.weight),
                                              .wk = M(n.aux[1]),
                                              .wv = M(n.aux[2]),
                                              .bq = Vec(n.aux[3]),
                                              .bk = Vec(n.aux[4]),
                                              .bv = Vec(n.aux[5]),
                                              .x = V(n.in[0]),
                                              .xt = in.in(),
                                              .norm_w = Vec(n.aux[0]),
                                              .freq_factors = Vec(n.rope.freq_factors),
                                              .q_out = V(n.out),
                                              .k_cache = Dev{k_cache(n.layer)},
                                              .v_cache = Dev{v_cache(n.layer)},
                                              .kv = kv,
                                              .n_rows = nr}));
      case Op::LayerNorm:
        return add(make_launch(spec, rows,
                               kargs::LayerNormArgs{.a = V(n.in[0]),
                                                    .w = Vec(n.weight),
                                                    .bias = Vec(n.aux[0]),
                                                    .y = V(n.out),
                                                    .n_rows = nr}));
      case Op::Gelu:
        return add(make_launch(spec, rows, kargs::RowsArgs{.a = V(n.in[0]), .b = Dev{}, .y = V(n.out), .n_rows = nr}));
      case Op::AddPosition:
        return add(make_launch(spec, rows,
                               kargs::PositionArgs{.a = V(n.in[0]),
                                                   .table = Vec(n.weight),
                                                   .positions = kv.positions,
                                                   .y = V(n.out),
                                                   .n_rows = nr}));
      case Op::Unfold: {  // the step's features (in the step block) or a previous layer's rows
        const bool features = n.in[0] < 0;
        return add(make_launch(spec, rows,
                               kargs::UnfoldArgs{.x = features ? Dev{features_ptr(s)} : V(n.in[0]),
                                                 .y = V(n.out),
                                                 .in_frames = Dev{features ? n_frames_ptr(s) : n_rows_ptr(s, g, n.in[0])},
                                                 .n_rows = nr}));
      }
      case Op::DenseAttention:
        return add(make_launch(spec, rows,
                               kargs::DenseAttentionArgs{.q = V(n.in[0]),
                                                         .k = V(n.in[1]),
                                                         .v = V(n.in[2]),
                                                         .out = V(n.out),
                                                         .seq = Dev{seq_ptr(s)},
                                                         .n_rows = nr}));
      case Op::CrossKvStore:
        return add(make_launch(spec, rows,
                               kargs::CrossKvStoreArgs{.k = V(n.in[0]),
                                                       .v = V(n.in[1]),
                                                       .k_mem = Dev{cross_k(n.layer)},
                                                       .v_mem = Dev{cross_v(n.layer)},
                                                       .positions = kv.positions,
                                                       .seq = kv.seq,
                                                       .cross_slot = Dev{cross_slot_ptr(s)},
                                                       .n_rows = Dev{n_rows_ptr(s, g, n.in[0])}}));
      case Op::CrossAttention:
        return add(make_launch(spec, rows,
                               kargs::CrossAttentionArgs{.q = V(n.in[0]),
                                                         .k_mem = Dev{cross_k(n.layer)},
                                                         .v_mem = Dev{cross_v(n.layer)},
                                                         .out = V(n.out),
                                                         .seq = kv.seq,
                                                         .cross_slot = Dev{cross_slot_ptr(s)},
                                                         .n_rows = nr}));
    }
    fail("the CUDA backend has no kernel for op ", graph::op_name(n.op));
  }

  // Compiles (or fetches) every kernel of a step and records its launches;
  // a capture made from the old ones is dropped.
  void record_launches(const Graph& g, GraphState& s) {
    drop_capture(s);
    s.node_launches.clear();
    s.split_launches.clear();
    s.kernels = 0;
    for (const Node& n : g.nodes()) {
      s.node_launches.push_back(launches_for(g, s, n));
      s.kernels += static_cast<int>(s.node_launches.back().size());
    }
    if (!s.has_logits) return;  // no sampler: an encoder's step
    s.sample = make_launch(sample_kernel_spec(s.n_vocab), g.config().max_outputs,
                           kargs::SampleArgs{.logits = Dev{value_ptr(s, g, g.output())},
                                             .scratch = Dev{s.scratch.ptr()},
                                             .records = Dev{step_at(s, s.layout.records())},
                                             .pairs = Dev{s.step.ptr()},  // offsets count from the block's start
                                             .ids = Dev{s.ids.ptr()},
                                             .n_rows = Dev{n_outputs_ptr(s)}});
    s.kernels += 1;
  }

  // Records the step's launches and the sampler into a CUDA graph.
  void capture(GraphState& s) {
    const auto& a = ctx_.api();
    drop_capture(s);
    check(a.cuStreamBeginCapture(ctx_.stream(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "begin graph capture");
    for (auto& node : s.node_launches)
      for (Launch& l : node) launch(l);
    if (s.has_logits) launch(s.sample);
    check(a.cuStreamEndCapture(ctx_.stream(), &s.cu_graph), "end graph capture");
    check(a.cuGraphInstantiate(&s.exec, s.cu_graph, 0), "instantiate the step graph");
  }

  CudaOptions options_;
  DeviceContext ctx_;
  KernelCache cache_;
  ModuleSet modules_;  // after the cache it loads for; unloaded after graphs_ and weights_ are gone
  graph::KvCacheConfig kv_config_;
  std::vector<size_t> layer_offsets_;  // byte offset of each layer's keys in kv_, and the end
  DeviceBuffer kv_;
  DeviceBuffer cross_;  // cross-attention keys and values (encoder-decoder models), after kv_
  std::map<std::pair<const void*, int>, DeviceWeight> weights_;
  std::map<const Graph*, GraphState> graphs_;
  GraphState* current_ = nullptr;
  int64_t vocab_rows_ = 0;
  int last_kernels_ = 0;
};

std::unique_ptr<graph::Backend> make_cuda_backend(const CudaOptions& options) {
  if (!cuda_available()) fail("CUDA unavailable: ", cuda_unavailable_reason());
  return std::make_unique<CudaBackend>(options);
}

static CudaBackend& as_cuda(graph::Backend& b) {
  auto* c = dynamic_cast<CudaBackend*>(&b);
  if (!c) fail("not a CUDA backend: ", b.name());
  return *c;
}

CudaBackendInfo cuda_backend_info(const graph::Backend& backend) {
  return as_cuda(const_cast<graph::Backend&>(backend)).info();
}

int kernels_per_step(const graph::Backend& backend, const graph::Graph& graph) {
  return as_cuda(const_cast<graph::Backend&>(backend)).kernels_of(graph);
}

}  // namespace rayo::cuda
