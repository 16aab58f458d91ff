#pragma once
// Unmasked attention of a whole sequence over itself, one head at a time: an
// encoder's self-attention (Whisper: 1500 positions). Per block of query rows,
//   scores = scale * q K^T,  softmax per row,  out = scores V,
// both products in register-tiled kernels that broadcast the left operand and
// stream 16 to 64 columns of the right one (8 rows x 32 columns with AVX-512;
// a decoder's one or two queries a cross-attention take 64): K^T is packed once per
// head ([head_dim][len16], zero-padded to a multiple of 16 positions) so that
// both products read their right operand row by row. A block's scores (rows x
// len16 floats) stay in cache between the two products.
#include <cstddef>
#include <cstdint>

namespace rayo::cpu {

struct DenseHead {
  const float* q = nullptr;  // row i of this head: q + i * stride (head_dim values)
  const float* k = nullptr;
  const float* v = nullptr;
  float* out = nullptr;
  int64_t stride = 0;        // floats between consecutive rows of q, k, v and out
  int64_t len = 0;           // rows of the sequence
  int head_dim = 0;          // a multiple of 16
  float scale = 0.0f;
};

// Positions rounded up to the kernel's 16 columns.
inline int64_t dense_padded_len(int64_t len) { return (len + 15) / 16 * 16; }

// Whether the head size suits the kernel (a multiple of 16).
bool dense_attention_supported(int head_dim);

// kt = K^T, [head_dim][dense_padded_len(len)], the padding zero.
void pack_keys_transposed(const DenseHead& h, float* kt);

// Output rows [r0, r1) of the head (a block of a few dozen rows, whose scores stay in cache).
// scores: (r1 - r0) x dense_padded_len(len) floats of scratch.
void dense_attention_rows(const DenseHead& h, const float* kt, int64_t r0, int64_t r1, float* scores);

}  // namespace rayo::cpu
