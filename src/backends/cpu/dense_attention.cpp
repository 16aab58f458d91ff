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

// Every kernel computes C[r][0..width) = alpha * sum_k A[r][k] B[k][0..width)
// for rows r < rows (at most its own row count), summing each output over k in
// order, one multiply-add at a time: whatever the kernel, the instruction set
// or the rows computed beside it, an output has the same bits (a beam's
// cross-attention does not depend on how many beams share its window). Rows
// missing from a kernel's tile read row 0 again and are not stored.
using TileFn = void (*)(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                        int64_t depth, int rows, float alpha);

// 16 columns.
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
// kRows x kVecs * 8 columns: per k, kVecs loads of B and kRows broadcasts of
// A, each multiplied into kVecs accumulators. Fewer rows take more columns,
// so that enough independent sums hide the multiply-add's latency.
//
// kAhead: the tile asks for B's row k 64 columns on (the strips that tiles to
// its right will read) as it reads its own. A decoder step's few queries read
// their cross-attention memory from main memory in strips of 16 columns down
// every row, too many streams at once for the hardware prefetcher: 5 queries
// against Whisper tiny's 18 MB ran at 5 GB/s on one Zen 2 core, 9 with this
// (bench_dense_attention's BM_CrossAttentionStep/5); a beam-5 transcription
// of long.wav 3-9% sooner. Encoder blocks, whose keys sit in the caches, go
// without.
template <int kRows, int kVecs, bool kAhead = false>
__attribute__((target("avx2,fma"))) void tile_avx2(const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                                                  int64_t ldc, int64_t depth, int rows, float alpha) {
  const float* ar[kRows];
  for (int r = 0; r < kRows; ++r) ar[r] = r < rows ? a + r * lda : a;
  __m256 acc[kRows][kVecs];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    if constexpr (kAhead) _mm_prefetch(reinterpret_cast<const char*>(b + k * ldb + 64), _MM_HINT_T0);
    __m256 bk[kVecs];
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) bk[v] = _mm256_loadu_ps(b + k * ldb + 8 * v);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m256 x = _mm256_broadcast_ss(ar[r] + k);
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_fmadd_ps(x, bk[v], acc[r][v]);
    }
  }
  const __m256 s = _mm256_set1_ps(alpha);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
    if (r < rows)
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) _mm256_storeu_ps(c + r * ldc + 8 * v, _mm256_mul_ps(s, acc[r][v]));
}

// The same with 16-float vectors: 8 rows x 32 columns give 16 sums (twice
// the AVX2 kernel's multiply-adds per cycle where 512-bit FMAs issue on two
// ports, half the broadcasts per multiply-add); a query or two (a decoder's
// cross-attention) take 64 columns at once instead.
template <int kRows, int kVecs>
__attribute__((target("avx2,fma,avx512f"))) void tile_avx512(const float* a, int64_t lda, const float* b,
                                                            int64_t ldb, float* c, int64_t ldc, int64_t depth,
                                                            int rows, float alpha) {
  const float* ar[kRows];
  for (int r = 0; r < kRows; ++r) ar[r] = r < rows ? a + r * lda : a;
  __m512 acc[kRows][kVecs];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    __m512 bk[kVecs];
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) bk[v] = _mm512_loadu_ps(b + k * ldb + 16 * v);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512 x = _mm512_set1_ps(ar[r][k]);
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(x, bk[v], acc[r][v]);
    }
  }
  const __m512 s = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
    if (r < rows)
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, _mm512_mul_ps(s, acc[r][v]));
}
#endif

struct Kernel {
  TileFn fn;
  int rows, cols;
};

// For a block of `left` rows: the kernel for most columns and the 16-column
// one for the rest (every width is a multiple of 16).
struct Kernels {
  Kernel wide, narrow;
};

// few: the product has at most kFewRows rows in all (a decoder's queries).
constexpr int64_t kFewRows = 8;

Kernels kernels_for(int64_t left, bool few) {
#if defined(__x86_64__)
  if (active_isa() == Isa::Avx512) {
    if (left == 1) return {{tile_avx512<1, 4>, 1, 64}, {tile_avx512<1, 1>, 1, 16}};
    if (left == 2) return {{tile_avx512<2, 4>, 2, 64}, {tile_avx512<2, 1>, 2, 16}};
    if (left <= 4) return {{tile_avx512<4, 2>, 4, 32}, {tile_avx512<4, 1>, 4, 16}};
    return {{tile_avx512<8, 2>, 8, 32}, {tile_avx512<8, 1>, 8, 16}};
  }
  if (active_isa() != Isa::Scalar) {
    if (left == 1) return {{tile_avx2<1, 4>, 1, 32}, {tile_avx2<1, 2>, 1, 16}};
    if (left == 2) return {{tile_avx2<2, 4>, 2, 32}, {tile_avx2<2, 2>, 2, 16}};
    // Blocks of 6 rows: 12 sums in flight cover the multiply-add's latency
    // (Zen 2: 5 cycles, 2 per cycle) that 4 rows' 8 left idle; Whisper's
    // encoder runs 4-5% faster on a 2-core Zen 2. Three to eight queries
    // (beams) take the tiles that prefetch; one or two read 32-column strips,
    // which the prefetcher follows well enough (no gain measured).
    if (few) {
      if (left <= 4) return {{tile_avx2<4, 2, true>, 4, 16}, {tile_avx2<4, 2, true>, 4, 16}};
      return {{tile_avx2<6, 2, true>, 6, 16}, {tile_avx2<6, 2, true>, 6, 16}};
    }
    if (left <= 4) return {{tile_avx2<4, 2>, 4, 16}, {tile_avx2<4, 2>, 4, 16}};
    return {{tile_avx2<6, 2>, 6, 16}, {tile_avx2<6, 2>, 6, 16}};
  }
#endif
  return {{tile_scalar, 4, 16}, {tile_scalar, 4, 16}};
}

// C = alpha A B for rows [0, rows) of A (rows of lda) and `cols` columns of B
// (rows of ldb). Whole tiles of rows first, then the few left with a kernel
// suited to that many; within each, column blocks outermost, so that each
// block of B is read from cache once for all the rows, not once per tile.
void product(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t depth,
             int64_t rows, int64_t cols, float alpha) {
  for (int64_t i = 0; i < rows;) {
    const Kernels k = kernels_for(rows - i, rows <= kFewRows);
    const int64_t end = rows - i >= k.wide.rows ? i + (rows - i) / k.wide.rows * k.wide.rows : rows;
    for (int64_t j = 0; j < cols;) {
      const Kernel& t = j + k.wide.cols <= cols ? k.wide : k.narrow;
      for (int64_t r = i; r < end; r += t.rows)
        t.fn(a + r * lda, lda, b + j, ldb, c + r * ldc + j, ldc, depth,
             static_cast<int>(std::min<int64_t>(t.rows, end - r)), alpha);
      j += t.cols;
    }
    i = end;
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
  const int64_t padded = dense_padded_len(h.len);
  product(h.q + r0 * h.stride, h.stride, kt, padded, scores, padded, h.head_dim, r1 - r0, padded, h.scale);
  for (int64_t i = r0; i < r1; ++i) {
    float* s = scores + (i - r0) * padded;
    softmax_row(s, h.len, 1.0f);
    std::fill(s + h.len, s + padded, 0.0f);
  }
  product(scores, padded, h.v, h.stride, h.out + r0 * h.stride, h.stride, h.len, r1 - r0, h.head_dim, 1.0f);
}

}  // namespace rayo::cpu
