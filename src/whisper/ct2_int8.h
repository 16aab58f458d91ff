#pragma once
// CTranslate2's int8 weights, as `ct2-transformers-converter --quantization
// int8` (or int8_float16, int8_bfloat16) writes them: a matrix (linear,
// convolution, embedding) of int8 values q, one row per output, beside a
// float32 variable "<name>_scale" of one value a row; the weight is q / scale
// (CTranslate2 chooses scale = 127 / the row's largest magnitude).
#include <cstddef>
#include <cstdint>

#include "whisper/ct2_model.h"

namespace rayo::whisper {

// The scale of an int8 matrix, or null when `v` is not an int8 matrix. Throws
// rayo::Error in one line naming the model when the scale is missing or not
// one float32 a row (int16 models, with one scale for the whole matrix, are
// refused this way too).
const Ct2Variable* ct2_int8_scale(const Ct2Model& model, const Ct2Variable& v);

// Rows [row0, row0 + rows) of the matrix as floats, q / scale, exactly (cols values a row).
void ct2_int8_to_f32(const Ct2Variable& v, const Ct2Variable& scale, int64_t row0, int64_t rows, float* out);

// The whole matrix as Q8_0 blocks (its rows must be whole blocks of 32): each
// block the row's q and its 1 / scale in f16, the int8 values unchanged.
void ct2_int8_to_q8_0(const Ct2Variable& v, const Ct2Variable& scale, std::byte* out);

}  // namespace rayo::whisper
