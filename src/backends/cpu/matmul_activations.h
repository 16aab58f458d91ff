#pragma once
// Activation rows quantized to 8 bits for the integer dot products of the
// quantized weight kernels. Both layouts are rayo's own (not ggml's Q8_0/Q8_K):
// they carry the integer sums the kernels need for zero-point and min
// corrections, so no kernel recomputes them.
//
// Quantization: d = max|x| / 127, q = round-to-nearest-even(x * (127 / max|x|)),
// so q is in [-127, 127] and x ~= d * q. Every instruction-set variant performs
// the same float operations in the same order, so all produce identical bytes.
//
// The 32-value blocks round as llama.cpp's Q8_0 and Q8_1 do (the activation
// formats it pairs with Q4_0 ... Q8_0 and IQ4_NL): d is kept at half
// precision, and the min term of Q4_1/Q5_1 uses s = half(d * sum of q) with
// the unrounded d. Those roundings change a logit of a 30-layer model by up to
// about 1 (SmolLM2-135M Q4_1): without them rayo's answers left llama.cpp's
// before a near-tie. The k-quants' blocks keep d in float, as llama.cpp's Q8_K.
#include <cstdint>

#include "backends/cpu/cpu_features.h"

namespace rayo::cpu {

// 32 values: for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 weights.
struct ActBlock32 {
  float d;       // max|x| / 127 rounded to half precision
  int32_t sum;   // sum of qs (for the zero points of Q4_0/Q5_0 and the u8 offset of the VNNI kernels)
  int8_t qs[32];
  float s;       // half(unrounded d * sum): for the mins of Q4_1/Q5_1
};
static_assert(sizeof(ActBlock32) == 44);

// 256 values: for the k-quants. qs is last and 64-byte aligned within the block
// (the block is 320 bytes), so SIMD loads of it are aligned when the row is.
struct ActBlockK {
  float d;
  int16_t bsum16[16];  // sums of qs[16 i .. 16 i + 15]
  int16_t bsum32[8];   // sums of qs[32 i .. 32 i + 31]
  uint8_t pad[12];
  int8_t qs[256];
};
static_assert(sizeof(ActBlockK) == 320);

// Quantizes k floats (k a multiple of 32, resp. 256) into k/32 (k/256) blocks.
void quantize_act32(Isa isa, const float* x, int64_t k, ActBlock32* out);
void quantize_actk(Isa isa, const float* x, int64_t k, ActBlockK* out);

}  // namespace rayo::cpu
