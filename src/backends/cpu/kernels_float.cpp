// Float-weight kernels: F32, F16 and BF16 rows times float activations.
//
// Every output is summed in the same order whatever the tile shape (16 lanes
// over k, then one horizontal sum), so a token's result does not depend on how
// many tokens are in the batch: batched prefill matches one-token decode bit
// for bit.
//
// The SIMD versions compute a register tile of kRows weight rows x kTok
// tokens: each weight vector (16 or 8 values, converted to float on load) is
// used for kTok fused multiply-adds and each activation vector for kRows, with
// kRows * kTok independent accumulators reduced horizontally once per tile.
#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels.h"
#include "common/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif
// GCC 12 flags the deliberately undefined registers inside its AVX-512
// intrinsic headers (-Wuninitialized false positives); silence just that.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace rayo::cpu::detail {
namespace {

template <TensorType kType>
inline float load_scalar(const void* row, int64_t k) {
  if constexpr (kType == TensorType::F32) return static_cast<const float*>(row)[k];
  else if constexpr (kType == TensorType::F16) return fp16_to_fp32(static_cast<const uint16_t*>(row)[k]);
  else return bf16_to_fp32(static_cast<const uint16_t*>(row)[k]);
}

template <TensorType kType>
const std::byte* row_ptr(const MatmulWeight& w, int64_t r) {
  return static_cast<const std::byte*>(w.data) + r * static_cast<int64_t>(row_bytes(kType, w.cols));
}

// Portable: eight partial sums per dot product to shorten the dependency chain.
template <TensorType kType>
void float_tile_scalar(const MatmulProblem& p, int64_t r0, int64_t r1, int64_t t0, int64_t t1, std::byte*) {
  const int64_t K = p.w->cols;
  for (int64_t r = r0; r < r1; ++r) {
    const std::byte* wr = row_ptr<kType>(*p.w, r);
    for (int64_t t = t0; t < t1; ++t) {
      const float* x = p.x + t * p.x_stride;
      float acc[8] = {};
      int64_t k = 0;
      for (; k + 8 <= K; k += 8)
        for (int j = 0; j < 8; ++j) acc[j] += load_scalar<kType>(wr, k + j) * x[k + j];
      for (; k < K; ++k) acc[0] += load_scalar<kType>(wr, k) * x[k];
      p.y[t * p.y_stride + r] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    }
  }
}

#if defined(__x86_64__)
#define RAYO_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")))
#define RAYO_AVX2 __attribute__((target("avx2,fma,f16c")))

template <TensorType kType>
RAYO_AVX512 inline __m512 load16(const std::byte* p, __mmask16 m) {
  if constexpr (kType == TensorType::F32) return _mm512_maskz_loadu_ps(m, p);
  else if constexpr (kType == TensorType::F16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}
template <TensorType kType>
RAYO_AVX512 inline __m512 load16(const std::byte* p) {
  if constexpr (kType == TensorType::F32) return _mm512_loadu_ps(p);
  else if constexpr (kType == TensorType::F16) return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
}

// kRows rows from r x kTok tokens from t; `first`: the first pass over these
// rows, which reads them from memory and asks for the next tile's as it goes
// (see micro_avx2).
template <TensorType kType, int kRows, int kTok>
RAYO_AVX512 void micro_avx512(const MatmulProblem& p, int64_t r, int64_t t, bool first) {
  constexpr int64_t kElem = kType == TensorType::F32 ? 4 : 2;
  const int64_t K = p.w->cols;
  const std::byte* w[kRows];
  const float* x[kTok];
  for (int i = 0; i < kRows; ++i) w[i] = row_ptr<kType>(*p.w, r + i);
  for (int j = 0; j < kTok; ++j) x[j] = p.x + (t + j) * p.x_stride;
  __m512 acc[kRows][kTok];
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < kTok; ++j) acc[i][j] = _mm512_setzero_ps();
  const int64_t ahead = kRows * K * kElem;
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    __m512 xv[kTok];
    for (int j = 0; j < kTok; ++j) xv[j] = _mm512_loadu_ps(x[j] + k);
    if (first && (k * kElem) % 64 == 0)
      for (int i = 0; i < kRows; ++i) _mm_prefetch(reinterpret_cast<const char*>(w[i] + ahead + k * kElem), _MM_HINT_T0);
    for (int i = 0; i < kRows; ++i) {
      const __m512 wv = load16<kType>(w[i] + k * kElem);
      for (int j = 0; j < kTok; ++j) acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  if (k < K) {
    const __mmask16 m = static_cast<__mmask16>((1u << (K - k)) - 1);
    __m512 xv[kTok];
    for (int j = 0; j < kTok; ++j) xv[j] = _mm512_maskz_loadu_ps(m, x[j] + k);
    for (int i = 0; i < kRows; ++i) {
      const __m512 wv = load16<kType>(w[i] + k * kElem, m);
      for (int j = 0; j < kTok; ++j) acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < kTok; ++j) p.y[(t + j) * p.y_stride + r + i] = _mm512_reduce_add_ps(acc[i][j]);
}

template <TensorType kType>
RAYO_AVX2 inline __m256 load8(const std::byte* p) {
  if constexpr (kType == TensorType::F32) return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  else if constexpr (kType == TensorType::F16) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  else return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}

RAYO_AVX2 inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// kRows rows (w[i], K values of kType) x kTok tokens from token t, into rows
// r.. of y; `first`: the first pass over these rows (which reads them from memory).
template <TensorType kType, int kRows, int kTok>
RAYO_AVX2 void micro_avx2(const MatmulProblem& p, const std::byte* const* w, int64_t r, int64_t t, bool first) {
  constexpr int64_t kElem = kType == TensorType::F32 ? 4 : 2;
  const int64_t K = p.w->cols;
  const float* x[kTok];
  for (int j = 0; j < kTok; ++j) x[j] = p.x + (t + j) * p.x_stride;
  __m256 acc[kRows][kTok];
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < kTok; ++j) acc[i][j] = _mm256_setzero_ps();
  // The tile's rows are kRows interleaved streams, too short (a row of 896
  // halves is 1.8 KB) for the hardware prefetcher to ramp up on: each row asks
  // for its bytes kRows rows ahead (the next tile's) as it goes.
  const int64_t ahead = kRows * K * kElem;
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 xv[kTok];
    for (int j = 0; j < kTok; ++j) xv[j] = _mm256_loadu_ps(x[j] + k);
    if (first && (k * kElem) % 64 == 0)
      for (int i = 0; i < kRows; ++i) _mm_prefetch(reinterpret_cast<const char*>(w[i] + ahead + k * kElem), _MM_HINT_T0);
    for (int i = 0; i < kRows; ++i) {
      const __m256 wv = load8<kType>(w[i] + k * kElem);
      for (int j = 0; j < kTok; ++j) acc[i][j] = _mm256_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < kTok; ++j) {
      float s = hsum8(acc[i][j]);
      for (int64_t kk = k; kk < K; ++kk)
        s += load_scalar<kType>(w[i], kk) * x[j][kk];
      p.y[(t + j) * p.y_stride + r + i] = s;
    }
}

// Walks the tile in kRows x kTok register tiles (smaller ones at the edges).
template <typename Micro4, typename Micro1>
inline void walk_tiles(int64_t r0, int64_t r1, int64_t t0, int64_t t1, Micro4 micro4, Micro1 micro1) {
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) micro4(r, t0, t1);
  for (; r < r1; ++r) micro1(r, t0, t1);
}

template <TensorType kType, int kRows>
RAYO_AVX512 void token_loop_avx512(const MatmulProblem& p, int64_t r, int64_t t0, int64_t t1) {
  int64_t t = t0;
  for (; t + 4 <= t1; t += 4) micro_avx512<kType, kRows, 4>(p, r, t, t == t0);
  switch (t1 - t) {
    case 3: micro_avx512<kType, kRows, 3>(p, r, t, t == t0); break;
    case 2: micro_avx512<kType, kRows, 2>(p, r, t, t == t0); break;
    case 1: micro_avx512<kType, kRows, 1>(p, r, t, t == t0); break;
    default: break;
  }
}

template <TensorType kType, int kRows>
RAYO_AVX2 void token_loop_avx2(const MatmulProblem& p, const std::byte* const* w, int64_t r, int64_t t0, int64_t t1) {
  // Triples, and a last four as two pairs rather than a triple and a single:
  // a one-token tile does a third of a triple's multiply-adds per weight
  // conversion, and waits on each accumulator's latency (64 tokens would
  // spend 6% of their time on the last one).
  int64_t t = t0;
  for (; t + 3 <= t1 && t1 - t != 4; t += 3) micro_avx2<kType, kRows, 3>(p, w, r, t, t == t0);
  if (t1 - t == 4) {
    micro_avx2<kType, kRows, 2>(p, w, r, t, t == t0);
    t += 2;
  }
  switch (t1 - t) {
    case 2: micro_avx2<kType, kRows, 2>(p, w, r, t, t == t0); break;
    case 1: micro_avx2<kType, kRows, 1>(p, w, r, t, t == t0); break;
    default: break;
  }
}

template <TensorType kType, int kRows>
RAYO_AVX2 void rows_avx2(const MatmulProblem& p, int64_t r, int64_t t0, int64_t t1) {
  const std::byte* w[kRows];
  for (int i = 0; i < kRows; ++i) w[i] = row_ptr<kType>(*p.w, r + i);
  token_loop_avx2<kType, kRows>(p, w, r, t0, t1);
}

template <TensorType kType>
void float_tile_avx512(const MatmulProblem& p, int64_t r0, int64_t r1, int64_t t0, int64_t t1, std::byte*) {
  walk_tiles(
      r0, r1, t0, t1, [&](int64_t r, int64_t a, int64_t b) { token_loop_avx512<kType, 4>(p, r, a, b); },
      [&](int64_t r, int64_t a, int64_t b) { token_loop_avx512<kType, 1>(p, r, a, b); });
}

template <TensorType kType>
void float_tile_avx2(const MatmulProblem& p, int64_t r0, int64_t r1, int64_t t0, int64_t t1, std::byte*) {
  walk_tiles(
      r0, r1, t0, t1, [&](int64_t r, int64_t a, int64_t b) { rows_avx2<kType, 4>(p, r, a, b); },
      [&](int64_t r, int64_t a, int64_t b) { rows_avx2<kType, 1>(p, r, a, b); });
}
#endif

template <template <TensorType> class Pick>
TileKernel pick(TensorType type) {
  switch (type) {
    case TensorType::F32: return Pick<TensorType::F32>::fn;
    case TensorType::F16: return Pick<TensorType::F16>::fn;
    default: return Pick<TensorType::BF16>::fn;
  }
}

template <TensorType T>
struct PickScalar {
  static constexpr TileKernel fn = &float_tile_scalar<T>;
};
#if defined(__x86_64__)
template <TensorType T>
struct PickAvx512 {
  static constexpr TileKernel fn = &float_tile_avx512<T>;
};
template <TensorType T>
struct PickAvx2 {
  static constexpr TileKernel fn = &float_tile_avx2<T>;
};
#endif

}  // namespace

TileKernel float_kernel(Isa isa, TensorType type) {
#if defined(__x86_64__)
  if (isa == Isa::Avx512) return pick<PickAvx512>(type);
  if (isa == Isa::Avx2) return pick<PickAvx2>(type);
#endif
  return pick<PickScalar>(type);
}

}  // namespace rayo::cpu::detail
