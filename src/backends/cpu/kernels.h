#pragma once
// Internal interface between the matmul driver (matmul.cpp) and the kernels.
// A kernel computes the outputs of a rectangle of rows x tokens; the driver
// quantizes the activations beforehand and splits the rectangles over threads.
#include <cstddef>
#include <cstdint>

#include "backends/cpu/matmul.h"
#include "backends/cpu/matmul_activations.h"

namespace rayo::cpu::detail {

struct MatmulProblem {
  const MatmulWeight* w;
  const float* x;           // float activations (float weights)
  int64_t x_stride;         // floats
  const std::byte* xq;      // quantized activations: ActBlock32 or ActBlockK rows
  int64_t xq_stride;        // bytes between token rows of xq
  float* y;
  int64_t y_stride;         // floats
  int64_t n_tokens;
};

// Computes y[t][r] for r in [r0, r1), t in [t0, t1). scratch: the thread's own
// scratch_bytes(...) bytes, 64-byte aligned.
using TileKernel = void (*)(const MatmulProblem& p, int64_t r0, int64_t r1, int64_t t0, int64_t t1,
                            std::byte* scratch);

// Which activation form a kernel reads.
enum class ActKind { Float, Q32, QK };

ActKind act_kind(TensorType weight_type);

// Portable kernels over the decoded rows of kernels_decode.h, compiled once per
// instruction set (the compiler vectorizes the integer dot products).
// Scratch: generic_scratch_bytes(cols).
size_t generic_scratch_bytes(int64_t cols);
TileKernel generic_quant_kernel(Isa isa, TensorType type);

// Float weights (F32, F16, BF16) times float activations.
TileKernel float_kernel(Isa isa, TensorType type);

}  // namespace rayo::cpu::detail
