#include "backends/cpu/dense_attention.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/encoder_decoder_ops.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rayo::cpu {
namespace {

// C[r][0..16) = alpha * sum_k A[r][k] B[k][0..16) for rows r < rows (at most
// 4; 8 for the AVX-512 kernel). Every kernel sums each output over k in order,
// one multiply-add at a time: they give the same bits.
void tile_scalar(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t depth,
                 int rows, float alpha) {
  for (int r = 0; r < rows; ++r) {
    float acc[16] = {};
    for (int64_t k = 0; k < depth; ++k)
      for (int j = 0; j < 16; ++j) acc[j] += a[r * lda + k] * b[k * ldb + j];
    for (int j = 0; j < 16; ++j) c[r * ldc + j] = alpha * acc[j];
  }
}

#if defined(__x86_64__)
// The same with 4 x 2 accumulators of 8: per k, two loads of B, four broadcasts of A, eight FMAs.
// Missing rows read row 0 again and are not stored.
__attribute__((target("avx2,fma"))) void tile_avx2(const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                                                  int64_t ldc, int64_t depth, int rows, float alpha) {
  const float* a0 = a;
  const float* a1 = rows > 1 ? a + lda : a;
  const float* a2 = rows > 2 ? a + 2 * lda : a;
  const float* a3 = rows > 3 ? a + 3 * lda : a;
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps(), c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b + k * ldb);
    const __m256 b1 = _mm256_loadu_ps(b + k * ldb + 8);
    __m256 x = _mm256_broadcast_ss(a0 + k);
    c00 = _mm256_fmadd_ps(x, b0, c00);
    c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a1 + k);
    c10 = _mm256_fmadd_ps(x, b0, c10);
    c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a2 + k);
    c20 = _mm256_fmadd_ps(x, b0, c20);
    c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a3 + k);
    c30 = _mm256_fmadd_ps(x, b0, c30);
    c31 = _mm256_fmadd_ps(x, b1, c31);
  }
  const __m256 s = _mm256_set1_ps(alpha);
  const __m256 out[4][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
  for (int r = 0; r < rows; ++r) {
    _mm256_storeu_ps(c + r * ldc, _mm256_mul_ps(s, out[r][0]));
    _mm256_storeu_ps(c + r * ldc + 8, _mm256_mul_ps(s, out[r][1]));
  }
}

// 8 rows x 16 columns, one accumulator of 16 a row: per k, one load of B and
// eight multiply-adds with A's values broadcast from memory (twice the AVX2
// kernel's multiply-adds per cycle where 512-bit FMAs issue on two ports).
// Missing rows read row 0 again and are not stored.
__attribute__((target("avx2,fma,avx512f"))) void tile_avx512(const float* a, int64_t lda, const float* b,
                                                            int64_t ldb, float* c, int64_t ldc, int64_t depth,
                                                            int rows, float alpha) {
  constexpr int kRows = 8;
  const float* ar[kRows];
  for (int r = 0; r < kRows; ++r) ar[r] = r < rows ? a + r * lda : a;
  __m512 acc[kRows];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    const __m512 bk = _mm512_loadu_ps(b + k * ldb);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(ar[r][k]), bk, acc[r]);
  }
  const __m512 s = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
    if (r < rows) _mm512_storeu_ps(c + r * ldc, _mm512_mul_ps(s, acc[r]));
}
#endif

using TileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, int, float);

// The kernel and the rows it takes at once.
struct Tile {
  TileFn fn;
  int rows;
};

Tile tile_kernel() {
#if defined(__x86_64__)
  if (active_isa() == Isa::Avx512) return {tile_avx512, 8};
  if (active_isa() != Isa::Scalar) return {tile_avx2, 4};
#endif
  return {tile_scalar, 4};
}

}  // namespace

bool dense_attention_supported(int head_dim) { return head_dim > 0 && head_dim % 16 == 0; }

void pack_keys_transposed(const DenseHead& h, float* kt) {
  const int64_t padded = dense_padded_len(h.len);
  for (int d = 0; d < h.head_dim; ++d) {
    float* row = kt + d * padded;
    for (int64_t j = 0; j < h.len; ++j) row[j] = h.k[j * h.stride + d];
    std::fill(row + h.len, row + padded, 0.0f);
  }
}

void dense_attention_rows(const DenseHead& h, const float* kt, int64_t r0, int64_t r1, float* scores) {
  const auto [tile, tile_rows] = tile_kernel();
  const int64_t padded = dense_padded_len(h.len);
  const auto rows_at = [&](int64_t i) { return static_cast<int>(std::min<int64_t>(tile_rows, r1 - i)); };
  // Column blocks outermost: each 16 columns of K^T (then of V) are read from
  // cache once for all the block's rows, not once per tile of rows.
  for (int64_t j = 0; j < padded; j += 16)
    for (int64_t i = r0; i < r1; i += tile_rows)
      tile(h.q + i * h.stride, h.stride, kt + j, padded, scores + (i - r0) * padded + j, padded, h.head_dim,
           rows_at(i), h.scale);
  for (int64_t i = r0; i < r1; ++i) {
    float* s = scores + (i - r0) * padded;
    softmax_row(s, h.len, 1.0f);
    std::fill(s + h.len, s + padded, 0.0f);
  }
  for (int c = 0; c < h.head_dim; c += 16)
    for (int64_t i = r0; i < r1; i += tile_rows)
      tile(scores + (i - r0) * padded, padded, h.v + c, h.stride, h.out + i * h.stride + c, h.stride, h.len,
           rows_at(i), 1.0f);
}

}  // namespace rayo::cpu
