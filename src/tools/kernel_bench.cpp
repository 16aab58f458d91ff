#include "tools/kernel_bench.h"

#include <algorithm>
#include <cstring>

#include "backends/cuda/kernel_args.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/weight_layout.h"
#include "common/error.h"

namespace rayo::tools {

using namespace cuda;  // the backend's kernels, layouts and driver, timed alone

namespace {

bool is_quantized(TensorType t) { return has_gpu_layout(t); }

// Bytes one matrix takes on the device, and the file's bytes of it.
size_t device_bytes(const KernelBenchCase& c) {
  return is_quantized(c.type) ? gpu_layout(c.type, c.rows, c.cols).bytes : row_bytes(c.type, c.cols) * c.rows;
}

}  // namespace

bool kernel_bench_on_tensor_cores(const KernelBenchCase& c) {
  switch (c.path) {
    case KernelBenchPath::Gemv: return false;
    case KernelBenchPath::Gemm:
    case KernelBenchPath::Int8:
    case KernelBenchPath::Exact:
    case KernelBenchPath::Dense:
    case KernelBenchPath::DenseGemm:
      if (!is_quantized(c.type)) fail("no tensor-core GEMM multiplies ", type_name(c.type), " weights");
      return true;
    case KernelBenchPath::Auto: break;
  }
  return c.tokens >= gemm_min_tokens() && is_quantized(c.type);
}

KernelSpec kernel_bench_spec(const KernelBenchCase& c) {
  if (c.path == KernelBenchPath::Dense || c.path == KernelBenchPath::DenseGemm) {
    kernel_bench_on_tensor_cores(c);  // quantized weights only
    return dense_gemm_spec(c.rows, c.cols);
  }
  const bool q = is_quantized(c.type);
  const int tt = gemv_token_tile(c.tokens);
  const int slices = gemv_slices(c.type, c.rows, tt);  // as a graph's
  constexpr float kEps = 1e-5f;
  KernelSpec s;
  switch (c.kind) {
    case KernelBenchKind::Gemv: s = gemv_spec(c.type, c.cols, c.rows, tt, -1.0f, 0, {}, slices); break;
    case KernelBenchKind::GemvResidual: s = gemv_spec(c.type, c.cols, c.rows, tt, -1.0f, 1, Emit{q, q, true}, slices); break;
    case KernelBenchKind::GateUp: s = gemv_swiglu_spec(c.type, c.type, c.cols, c.rows, tt, kEps, Emit{q, false, false}); break;
    case KernelBenchKind::Logits: s = gemv_spec(c.type, c.cols, c.rows, tt, kEps, 0, {}, slices); break;
  }
  // Auto: the GEMM a graph would use (gemm_tile_for: its cases fit the int8 tiles).
  const GemmTile tile = c.path == KernelBenchPath::Exact  ? GemmTile::Exact
                        : c.path == KernelBenchPath::Int8 ? GemmTile::Int8
                        : c.path == KernelBenchPath::Auto ? prompt_gemm_tile(c.type)
                                                          : GemmTile::F16;
  return kernel_bench_on_tensor_cores(c) ? tensor_core_variant(s, tile) : s;
}

double KernelBench::dense_f16_peak() const {
  // Dense f16 tensor-core FLOP per clock per SM with f32 accumulation.
  int per_sm = 0;
  switch (ctx_.compute_capability()) {
    case 80: per_sm = 2048; break;  // A100
    case 86:
    case 87:
    case 89: per_sm = 512; break;   // Ampere/Ada parts with half-rate f32 accumulation
    case 90: per_sm = 4096; break;  // H100, H200
    default: break;
  }
  return static_cast<double>(per_sm) * ctx_.sm_count() * ctx_.clock_khz() * 1e3;
}

std::vector<KernelBenchCase> decoder_bench_cases(int64_t n_embd, int64_t n_ff, int64_t q_dim, int64_t kv_dim,
                                                 int64_t n_vocab, TensorType type, int64_t tokens) {
  using K = KernelBenchKind;
  return {{"attn_q", K::Gemv, type, q_dim, n_embd, tokens},
          {"attn_k/v", K::Gemv, type, kv_dim, n_embd, tokens},
          {"attn_output", K::GemvResidual, type, n_embd, q_dim, tokens},
          {"ffn_gate+up", K::GateUp, type, n_ff, n_embd, tokens},
          {"ffn_down", K::GemvResidual, type, n_embd, n_ff, tokens},
          {"output", K::Logits, type, n_vocab, n_embd, tokens}};
}

KernelBench::KernelBench(int device)
    : ctx_(device), cache_(ctx_.arch(), Driver::get().version()), modules_(ctx_, cache_) {
  if (!Nvrtc::get().is_available()) fail(Nvrtc::get().unavailable_reason());
}

KernelBenchResult KernelBench::run(const KernelBenchCase& c, int rounds, int max_copies) {
  RAYO_CHECK(rounds > 0 && max_copies > 0 && c.rows > 0 && c.cols > 0, "bad kernel benchmark case");
  const auto& a = ctx_.api();
  const bool gate_up = c.kind == KernelBenchKind::GateUp;
  const int matrices = gate_up ? 2 : 1;
  const bool dense = c.path == KernelBenchPath::Dense, dense_only = c.path == KernelBenchPath::DenseGemm;
  // Dense decodes the file's layout (dequant_f16 reads it); DenseGemm reads f16 rows.
  const size_t matrix = dense_only ? static_cast<size_t>(c.rows * c.cols * 2)
                        : dense    ? row_bytes(c.type, c.cols) * c.rows
                                   : device_bytes(c);
  KernelBenchResult r;
  r.weight_bytes = dense_only ? static_cast<uint64_t>(matrices) * matrix
                              : static_cast<uint64_t>(matrices) * row_bytes(c.type, c.cols) * c.rows;
  r.flops = 2.0 * matrices * static_cast<double>(c.rows) * static_cast<double>(c.cols) * static_cast<double>(c.tokens);
  RAYO_CHECK(c.tokens >= 1 && c.tokens <= (int64_t{1} << 16), "kernel benchmark of ", c.tokens, " tokens");

  // Copies of the weights: together at least 4x a large L2 cache (50 MiB on an
  // H100), within half the free memory and max_copies.
  size_t free_bytes = 0, total_bytes = 0;
  check(a.cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo");
  const size_t per_launch = matrix * matrices;
  const size_t wanted = (size_t{200} << 20) / per_launch + 1;
  r.copies = static_cast<int>(
      std::clamp<size_t>(std::min(wanted, free_bytes / 2 / per_launch), 1, static_cast<size_t>(max_copies)));
  DeviceBuffer weights = ctx_.alloc(per_launch * r.copies);
  check(a.cuMemsetD8(weights.ptr(), 0x11, weights.bytes()), "fill the weights");

  // Activations (for every token): x and its twin in, y (and its twin) out, a
  // residual, norm weights, the step's row count.
  const int64_t in = c.cols * c.tokens, out = c.rows * c.tokens;
  auto zeroed = [&](size_t bytes) {
    DeviceBuffer b = ctx_.alloc(std::max<size_t>(bytes, 256));
    check(a.cuMemsetD8(b.ptr(), 0, b.bytes()), "clear a buffer");
    return b;
  };
  DeviceBuffer x = zeroed(in * 4), xq = zeroed(in), xds = zeroed(in / 32 * 8), xss = zeroed((in + 31) / 32 * 4);
  DeviceBuffer norm_w = zeroed(std::max(c.cols, c.rows) * 4), y = zeroed(out * 4), res = zeroed(out * 4);
  DeviceBuffer yq = zeroed(out), yds = zeroed(out / 32 * 8), yss = zeroed((out + 31) / 32 * 4);
  // Dense: the decoded f16 matrix (one, reused by every launch) and the f16 tokens.
  DeviceBuffer decoded = zeroed(dense ? static_cast<size_t>(c.rows * c.cols * 2) : 0), x16 = zeroed(in * 2);
  DeviceBuffer n_rows = ctx_.alloc(sizeof(int32_t));
  const int32_t tokens = static_cast<int32_t>(c.tokens);
  ctx_.upload(n_rows.ptr(), &tokens, sizeof tokens);

  struct Kernel {
    CUfunction fn = nullptr;
    LaunchShape shape;
  };
  auto kernel = [&](const KernelSpec& spec) {
    return Kernel{kernel_function(cache_.get(spec), spec, spec.entry.c_str()), spec.launch(c.tokens)};
  };
  const Kernel timed = kernel(kernel_bench_spec(c));
  const Kernel decode = dense ? kernel(dequant_spec(c.type, c.cols, {}, "dequant_f16")) : Kernel{};
  struct Launch {
    Kernel k;
    std::vector<uint64_t> args;
  };
  std::vector<Launch> launches;
  auto add = [&](const Kernel& k, const auto& args) {
    launches.push_back({k, std::vector<uint64_t>(sizeof args / 8)});
    std::memcpy(launches.back().args.data(), &args, sizeof args);
  };
  using kargs::Dev;
  for (int i = 0; i < r.copies; ++i) {
    const CUdeviceptr w = weights.ptr() + per_launch * i;
    const kargs::TwinIn xt{.q = Dev{xq.ptr()}, .ds = Dev{xds.ptr()}, .ss = Dev{xss.ptr()}};
    const kargs::TwinOut yt{.q = Dev{yq.ptr()}, .ds = Dev{yds.ptr()}, .ss = Dev{yss.ptr()}};
    if (dense || dense_only) {
      for (int m = 0; m < matrices; ++m) {
        CUdeviceptr w16 = w + matrix * m;
        if (dense) {
          add(decode, kargs::DequantArgs{.w = Dev{w16}, .out = Dev{decoded.ptr()}, .rows = c.rows});
          w16 = decoded.ptr();
        }
        add(timed, kargs::DenseGemmArgs{.w = Dev{w16}, .x = Dev{x16.ptr()}, .y = Dev{y.ptr()}, .n_rows = Dev{n_rows.ptr()}});
      }
    } else if (gate_up) {
      add(timed, kargs::GateUpArgs{.gate = Dev{w},
                                  .up = Dev{w + matrix},
                                  .x = Dev{x.ptr()},
                                  .xt = xt,
                                  .norm_w = Dev{norm_w.ptr()},
                                  .y = Dev{y.ptr()},
                                  .yt = yt,
                                  .n_rows = Dev{n_rows.ptr()}});
    } else {
      add(timed, kargs::MatmulArgs{.w = Dev{w},
                                  .x = Dev{x.ptr()},
                                  .xt = xt,
                                  .norm_w = Dev{norm_w.ptr()},
                                  .y = Dev{y.ptr()},
                                  .epi = Dev{res.ptr()},
                                  .yt = yt,
                                  .y_norm_w = Dev{norm_w.ptr()},
                                  .n_rows = Dev{n_rows.ptr()}});
    }
  }

  // One graph: a copy's launches after another's.
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  CUevent start = nullptr, stop = nullptr;
  struct Release {
    const DriverApi& a;
    CUgraph& g;
    CUgraphExec& e;
    CUevent &s, &t;
    ~Release() {
      if (e) a.cuGraphExecDestroy(e);
      if (g) a.cuGraphDestroy(g);
      if (s) a.cuEventDestroy(s);
      if (t) a.cuEventDestroy(t);
    }
  } release{a, graph, exec, start, stop};
  check(a.cuStreamBeginCapture(ctx_.stream(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "begin graph capture");
  for (auto& l : launches) {
    void* param = l.args.data();
    const LaunchShape& sh = l.k.shape;
    ctx_.launch(l.k.fn, sh.grid[0], sh.grid[1], sh.grid[2], sh.block, &param, sh.shared);
  }
  check(a.cuStreamEndCapture(ctx_.stream(), &graph), "end graph capture");
  check(a.cuGraphInstantiate(&exec, graph, 0), "instantiate the benchmark graph");
  check(a.cuEventCreate(&start, 0), "cuEventCreate");
  check(a.cuEventCreate(&stop, 0), "cuEventCreate");
  ctx_.launch_graph(exec);  // warm-up
  ctx_.synchronize();
  double best = 0;
  for (int i = 0; i < rounds; ++i) {
    check(a.cuEventRecord(start, ctx_.stream()), "cuEventRecord");
    ctx_.launch_graph(exec);
    check(a.cuEventRecord(stop, ctx_.stream()), "cuEventRecord");
    check(a.cuEventSynchronize(stop), "cuEventSynchronize");
    float ms = 0;
    check(a.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
    const double per_launch_s = static_cast<double>(ms) * 1e-3 / r.copies;
    if (per_launch_s > 0 && (best == 0 || per_launch_s < best)) best = per_launch_s;
  }
  r.seconds = best;
  return r;
}

}  // namespace rayo::tools
