#pragma once
// Reference quantization f32 -> block formats, reproducing ggml's
// quantize_row_*_ref (the path llama-quantize takes without an importance
// matrix) operation for operation, so that a row quantized here is
// byte-identical to llama.cpp's.
//
// The 8-bit formats (Q8_0, Q8_1, Q8_K) also quantize activations for the CPU
// kernels, so they are total: an all-zero block gives d = 0 and zero quants,
// and huge or non-finite inputs never cause undefined behaviour. Where ggml's
// half-precision scale would overflow to infinity (block magnitude above
// 65504 * 127), Q8_0/Q8_1 saturate the scale at the largest half instead and
// clamp the quants, so the block stays finite; in range they match ggml bit
// for bit. (An all-zero Q8_K block also gets zero bsums; ggml leaves them.)
#include <cstdint>

#include "quant/blocks.h"
#include "quant/tensor_type.h"

namespace rayo::quant {

// True for the types quantize_row can produce.
bool can_quantize(TensorType type);

// Quantizes n floats (a whole number of blocks) into dst. Throws rayo::Error
// naming the type when it is not supported, or when n is negative or not a
// multiple of the block size.
void quantize_row(TensorType type, const float* src, void* dst, int64_t n);

// Per-format entry points; n must be a multiple of the block size (unchecked).
void quantize_row_f16(const float* x, uint16_t* y, int64_t n);
void quantize_row_bf16(const float* x, uint16_t* y, int64_t n);
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n);
void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t n);
void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t n);
void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t n);
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n);
void quantize_row_q2_K(const float* x, BlockQ2_K* y, int64_t n);
void quantize_row_q3_K(const float* x, BlockQ3_K* y, int64_t n);
void quantize_row_q4_K(const float* x, BlockQ4_K* y, int64_t n);
void quantize_row_q5_K(const float* x, BlockQ5_K* y, int64_t n);
void quantize_row_q6_K(const float* x, BlockQ6_K* y, int64_t n);
void quantize_row_q8_K(const float* x, BlockQ8_K* y, int64_t n);

}  // namespace rayo::quant
