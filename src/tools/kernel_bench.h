#pragma once
// The matmul kernels of a decode step timed one at a time (rayo bench
// --kernels): what each GEMV reaches against the device's memory roofline, per
// weight format, at a real model's shapes.
//
// A kernel is timed as a decode step runs it: replayed in a CUDA graph, over
// weights that stream from device memory. The graph cycles through enough
// copies of the matrix that they do not fit the L2 cache together (else a
// small matrix would be read from the cache). The time per launch includes the
// gap between consecutive kernels of a graph, which a decode step pays too.
// Weights and activations hold arbitrary values (a kernel's speed does not
// depend on them).
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/kernel_cache.h"
#include "backends/cuda/kernel_specs.h"
#include "backends/cuda/module_set.h"

namespace rayo::tools {

enum class KernelBenchKind {
  Gemv,          // y = W x: the q, k and v projections' shapes
  GemvResidual,  // y = W x + r, writing the twin of y for the next norm: attention output, ffn_down
  GateUp,        // silu(Wg x) * (Wu x) on a normalised x, writing the twin of y: ffn_gate + ffn_up
  Logits,        // y = W x on a normalised x: the output projection
};

// Which kernels multiply: as a step graph would (by the token count), or one
// family whatever the count, to time both side by side (the crossover).
enum class KernelBenchPath {
  Auto,  // tensor-core GEMMs from gemm_min_tokens() tokens (quantized weights), GEMVs below
  Gemv,  // the GEMVs (their token tiles beyond one token)
  Gemm,   // the f16 tensor-core GEMMs (quantized weights only)
  Int8,   // the int8 tensor-core GEMMs (quantized weights only)
  Exact,  // the exact int8 tensor-core GEMMs of batch-invariant graphs (quantized weights only)
  // gemm_dense.cu, not yet in any graph: the quantized matrix decoded to f16
  // rows (dequant.cu dequant_f16), then multiplied by f16 tokens (each matrix
  // of GateUp alone, no SwiGLU); DenseGemm times the multiply alone, on f16
  // weights (its weight bytes are theirs). Quantized weights only.
  Dense,
  DenseGemm,
};

struct KernelBenchCase {
  std::string name;  // "ffn_down"
  KernelBenchKind kind = KernelBenchKind::Gemv;
  TensorType type = TensorType::Q4_K;
  int64_t rows = 0, cols = 0;  // of W (each of gate and up for GateUp)
  int64_t tokens = 1;          // token rows multiplied at once
  KernelBenchPath path = KernelBenchPath::Auto;
};

// Whether a case runs on tensor-core GEMMs, f16, int8, exact or dense (a
// forced GEMM of float weights is an error: there is none).
bool kernel_bench_on_tensor_cores(const KernelBenchCase& c);
// The kernel variant a case runs: the decode GEMVs (their token tiles for a few
// tokens), the tensor-core GEMMs for many (the exact ones for Exact; for Dense
// and DenseGemm the dense GEMM, which Dense follows each decode with).
cuda::KernelSpec kernel_bench_spec(const KernelBenchCase& c);

// The matmuls of a step of `tokens` tokens of a model with these shapes, in one format.
std::vector<KernelBenchCase> decoder_bench_cases(int64_t n_embd, int64_t n_ff, int64_t q_dim, int64_t kv_dim,
                                                 int64_t n_vocab, TensorType type, int64_t tokens = 1);

struct KernelBenchResult {
  double seconds = 0;         // per launch (the best of the rounds)
  uint64_t weight_bytes = 0;  // read per launch (the file's bytes of the matrices)
  double flops = 0;           // per launch: 2 x rows x cols x tokens (x 2 for gate + up)
  int copies = 0;             // copies of the weights the graph cycles through
};

class KernelBench {
 public:
  explicit KernelBench(int device = 0);

  const std::string& device_name() const { return ctx_.name(); }
  std::string arch() const { return ctx_.arch(); }
  // The roofline: bytes per second a device-to-device copy moves (read + write).
  double copy_bandwidth() { return cuda::measure_copy_bandwidth(ctx_); }
  // The device's dense f16 tensor-core peak (FLOP/s, f32 accumulation), from its
  // SMs, clock and architecture; 0 for an architecture not in the table.
  double dense_f16_peak() const;
  // Times `rounds` replays of a graph of launches of c's kernel, over at most
  // max_copies copies of the weights.
  KernelBenchResult run(const KernelBenchCase& c, int rounds = 5, int max_copies = 256);
  const cuda::TransferStats& stats() const { return ctx_.stats(); }

 private:
  cuda::DeviceContext ctx_;
  cuda::KernelCache cache_;
  cuda::ModuleSet modules_;
};

}  // namespace rayo::tools
