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

// 8 rows x kVecs * 16 columns: per k, kVecs loads of B and 8 broadcasts of A,
// each multiplied into kVecs accumulators (twice the AVX2 kernel's
// multiply-adds per cycle where 512-bit FMAs issue on two ports; 32 columns
// halve the broadcasts per multiply-add and give 16 chains to hide the FMA
// latency behind). Missing rows read row 0 again and are not stored.
template <int kVecs>
__attribute__((target("avx2,fma,avx512f"))) void tile_avx512(const float* a, int64_t lda, const float* b,
                                                            int64_t ldb, float* c, int64_t ldc, int64_t depth,
                                                            int rows, float alpha) {
  constexpr int kRows = 8;
  const float* ar[kRows];
  for (int r = 0; r < kRows; ++r) ar[r] = r < rows ? a + r * lda : a;
  __m512 acc[kRows][kVecs];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    __m512 bk[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) bk[v] = _mm512_loadu_ps(b + k * ldb + 16 * v);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512 x = _mm512_set1_ps(ar[r][k]);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(x, bk[v], acc[r][v]);
    }
  }
  const __m512 s = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
    if (r < rows)
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, _mm512_mul_ps(s, acc[r][v]));
}
#endif

using TileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, int, float);

// The kernels of 16 columns and of 32 (null where the set has none), and the
// rows they take at once.
struct Tile {
  TileFn fn16, fn32;
  int rows;
};

Tile tile_kernel() {
#if defined(__x86_64__)
  if (active_isa() == Isa::Avx512) return {tile_avx512<1>, tile_avx512<2>, 8};
  if (active_isa() != Isa::Scalar) return {tile_avx2, nullptr, 4};
#endif
  return {tile_scalar, nullptr, 4};
}

// C = alpha A B for rows [r0, r1) of A (rows of lda) and `cols` columns of B
// (rows of ldb): column blocks outermost, so that each block of B is read
// from cache once for all the rows, not once per tile of rows.
void product(const Tile& tile, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
             int64_t depth, int64_t rows, int64_t cols, float alpha) {
  const auto rows_at = [&](int64_t i) { return static_cast<int>(std::min<int64_t>(tile.rows, rows - i)); };
  for (int64_t j = 0; j < cols;) {
    const bool wide = tile.fn32 && j + 32 <= cols;
    const TileFn fn = wide ? tile.fn32 : tile.fn16;
    for (int64_t i = 0; i < rows; i += tile.rows)
      fn(a + i * lda, lda, b + j, ldb, c + i * ldc + j, ldc, depth, rows_at(i), alpha);
    j += wide ? 32 : 16;
  }
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
  const Tile tile = tile_kernel();
  const int64_t padded = dense_padded_len(h.len);
  product(tile, h.q + r0 * h.stride, h.stride, kt, padded, scores, padded, h.head_dim, r1 - r0, padded, h.scale);
  for (int64_t i = r0; i < r1; ++i) {
    float* s = scores + (i - r0) * padded;
    softmax_row(s, h.len, 1.0f);
    std::fill(s + h.len, s + padded, 0.0f);
  }
  product(tile, scores, padded, h.v, h.stride, h.out + r0 * h.stride, h.stride, h.len, r1 - r0, h.head_dim, 1.0f);
}

}  // namespace rayo::cpu
