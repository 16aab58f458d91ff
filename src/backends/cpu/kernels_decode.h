#pragma once
// Decoding of quantized weight rows into a common integer form, used by the
// portable kernels (and as their reference semantics):
//
//     W[k] = scale[s] * q[k] - min[s]      s = k / sub_block_size(type)
//
// q is a small signed integer (int8), scale and min are floats per sub-block
// of 16 or 32 values. This matches ggml's dequantization value for value
// (scale and min are computed in float exactly as dequantize_row_* does).
#include <cstdint>

#include "quant/tensor_type.h"

namespace rayo::cpu {

// 32 for the 32-value formats, Q4_K, Q5_K and IQ4_XS; 16 for Q2_K, Q3_K and Q6_K.
int sub_block_size(TensorType type);

// Decodes one row of `cols` values (whole blocks) of a quantized type.
// q has cols entries; scale and min have cols / sub_block_size(type) entries.
void decode_row(TensorType type, const void* row, int64_t cols, int8_t* q, float* scale, float* min);

}  // namespace rayo::cpu
