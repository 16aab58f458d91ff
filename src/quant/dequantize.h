#pragma once
// Scalar reference dequantization, bit-exact with ggml's dequantize_row_*:
// every value is computed with the same float operations in the same order
// (no fused multiply-add), so tests can compare with llama.cpp using ==.
// The SIMD/GPU kernels are checked against these.
#include <cstdint>

#include "quant/blocks.h"
#include "quant/tensor_type.h"

namespace rayo::quant {

// True for the types dequantize_row accepts.
bool can_dequantize(TensorType type);

// Converts n values (a whole number of blocks) starting at src to floats.
// Throws rayo::Error naming the type when it is not supported, or when n is
// negative or not a multiple of the type's block size.
void dequantize_row(TensorType type, const void* src, float* dst, int64_t n);

// Per-format entry points; n must be a multiple of the block size (unchecked).
void dequantize_row_f32(const float* x, float* y, int64_t n);
void dequantize_row_f16(const uint16_t* x, float* y, int64_t n);
void dequantize_row_bf16(const uint16_t* x, float* y, int64_t n);
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n);
void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n);
void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n);
void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n);
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n);
void dequantize_row_q8_1(const BlockQ8_1* x, float* y, int64_t n);
void dequantize_row_q2_K(const BlockQ2_K* x, float* y, int64_t n);
void dequantize_row_q3_K(const BlockQ3_K* x, float* y, int64_t n);
void dequantize_row_q4_K(const BlockQ4_K* x, float* y, int64_t n);
void dequantize_row_q5_K(const BlockQ5_K* x, float* y, int64_t n);
void dequantize_row_q6_K(const BlockQ6_K* x, float* y, int64_t n);
void dequantize_row_q8_K(const BlockQ8_K* x, float* y, int64_t n);
void dequantize_row_iq4_nl(const BlockIQ4_NL* x, float* y, int64_t n);
void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, int64_t n);
void dequantize_row_mxfp4(const BlockMXFP4* x, float* y, int64_t n);

// MXFP4's shared exponent as a float: 2^(e - 128), subnormal for e < 2.
float e8m0_to_float_half(uint8_t e);

}  // namespace rayo::quant
