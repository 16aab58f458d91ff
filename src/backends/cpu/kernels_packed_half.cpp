// F16 and BF16 weights packed by rows (packed_layouts.h: value k of the R rows
// of a group side by side, R = 16 on AVX-512, 8 on AVX2) times float
// activations.
//
// A register tile is groups x tokens of outputs, one row per lane: each k
// loads one vector of R halves per group and converts it once, and each
// activation value x[t][k] is broadcast once and multiplied into every group
// of the tile. Against the row-by-row float kernels (kernels_float.cpp, which
// convert a vector of 16 values of each of 4 rows for 4 tokens, reading 16
// activations of each token) an AVX-512 prompt tile converts 2 vectors for 24
// multiply-adds instead of 4 for 16, and reads 1/8 of an activation byte per
// lane's multiply-add instead of 1: prompts run ~1.3x faster (F16 at
// TinyLlama's shapes, 2 Sapphire Rapids cores: 230 -> 300 GFLOP/s).
//
// Every output is one chain of multiply-adds over k in order, whatever the
// tile and whatever the instruction set: a token's outputs do not depend on
// its batch, and the AVX2 and AVX-512 kernels give the same bits.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "backends/cpu/kernels_packed.h"
#include "backends/cpu/packed_layouts.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// GCC 12 flags the deliberately undefined registers inside its AVX-512
// intrinsic headers (-Wuninitialized false positives); silence just that.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace rayo::cpu::detail {

#if defined(__x86_64__)
namespace {

#define RAYO_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")))
#define RAYO_AVX2 __attribute__((target("avx2,fma,f16c")))
// Every loop over the tile's groups and tokens unrolled, so that the
// accumulators stay in registers (an array indexed at run time lives in memory).
#define RAYO_UNROLL _Pragma("GCC unroll 16")

// Tiles: prompts take 2 groups x up to kPromptTokens tokens (24 accumulators
// of the 32 AVX-512 registers; 12 of AVX2's 16), steps of one or two tokens
// (decode) kDecodeGroups groups, so that each thread streams several groups
// at once.
constexpr int kPromptTokens512 = 12, kPromptTokens2 = 6;
constexpr int kDecodeGroups = 4;

// Bytes ahead of the current k that a decode tile asks for: its groups are
// separate streams of a matrix too large for the caches.
constexpr int64_t kPrefetchAhead = 1024;

const uint16_t* group_of(const MatmulProblem& p, int64_t g) {
  const PackedWeight& pw = *p.w->packed;
  return reinterpret_cast<const uint16_t*>(pw.data.get() + g * pw.group_bytes);
}

template <TensorType kType>
RAYO_AVX512 inline __m512 load_half16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if constexpr (kType == TensorType::F16) return _mm512_cvtph_ps(h);
  else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

template <TensorType kType>
RAYO_AVX2 inline __m256 load_half8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (kType == TensorType::F16) return _mm256_cvtph_ps(h);
  else return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Groups g .. g + kGroups - 1 (16 rows each) x tokens t .. t + kTok - 1;
// rows from r1 on (the last group's padding) are not written.
//
// Prefetch: the tiles over the same groups (`parts` of them, this one number
// `part`) share out the next groups' cache lines, one in `parts` each as they
// go, so that the next groups arrive while these are multiplied rather than
// all during the first tile; a tile of one or two tokens (parts 1) asks for
// its own groups' bytes kPrefetchAhead ahead.
template <TensorType kType, int kGroups, int kTok>
RAYO_AVX512 void tile_avx512(const MatmulProblem& p, int64_t g, int64_t t, int64_t r1, int part, int parts) {
  const int64_t K = p.w->cols;
  const uint16_t* w[kGroups];
  RAYO_UNROLL
  for (int i = 0; i < kGroups; ++i) w[i] = group_of(p, g + i);
  const float* x[kTok];
  RAYO_UNROLL
  for (int j = 0; j < kTok; ++j) x[j] = p.x + (t + j) * p.x_stride;
  __m512 acc[kGroups][kTok];
  RAYO_UNROLL
  for (int i = 0; i < kGroups; ++i)
    RAYO_UNROLL
    for (int j = 0; j < kTok; ++j) acc[i][j] = _mm512_setzero_ps();
  const int64_t ahead = kTok <= 2 ? kPrefetchAhead : static_cast<int64_t>(kGroups * p.w->packed->group_bytes);
  int turn = part;  // lines until this tile's next one
  for (int64_t k = 0; k < K; ++k) {
    if (k % 2 == 0) {  // a line of each group every other k: this tile's one in `parts`
      if (turn == 0) {
        RAYO_UNROLL
        for (int i = 0; i < kGroups; ++i)
          _mm_prefetch(reinterpret_cast<const char*>(w[i] + 16 * k) + ahead, _MM_HINT_T0);
        turn = parts;
      }
      --turn;
    }
    __m512 wv[kGroups];
    RAYO_UNROLL
    for (int i = 0; i < kGroups; ++i) wv[i] = load_half16<kType>(w[i] + 16 * k);
    RAYO_UNROLL
    for (int j = 0; j < kTok; ++j) {
      const __m512 xb = _mm512_set1_ps(x[j][k]);
      RAYO_UNROLL
      for (int i = 0; i < kGroups; ++i) acc[i][j] = _mm512_fmadd_ps(wv[i], xb, acc[i][j]);
    }
  }
  RAYO_UNROLL
  for (int i = 0; i < kGroups; ++i) {
    const int64_t row = 16 * (g + i);
    const int64_t n = std::min<int64_t>(16, r1 - row);
    if (n <= 0) continue;
    const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
    RAYO_UNROLL
    for (int j = 0; j < kTok; ++j) _mm512_mask_storeu_ps(p.y + (t + j) * p.y_stride + row, m, acc[i][j]);
  }
}

// As tile_avx512 with groups of 8 rows.
template <TensorType kType, int kGroups, int kTok>
RAYO_AVX2 void tile_avx2(const MatmulProblem& p, int64_t g, int64_t t, int64_t r1, int part, int parts) {
  const int64_t K = p.w->cols;
  const uint16_t* w[kGroups];
  RAYO_UNROLL
  for (int i = 0; i < kGroups; ++i) w[i] = group_of(p, g + i);
  const float* x[kTok];
  RAYO_UNROLL
  for (int j = 0; j < kTok; ++j) x[j] = p.x + (t + j) * p.x_stride;
  __m256 acc[kGroups][kTok];
  RAYO_UNROLL
  for (int i = 0; i < kGroups; ++i)
    RAYO_UNROLL
    for (int j = 0; j < kTok; ++j) acc[i][j] = _mm256_setzero_ps();
  const int64_t ahead = kTok <= 2 ? kPrefetchAhead : static_cast<int64_t>(kGroups * p.w->packed->group_bytes);
  int turn = part;  // lines until this tile's next one
  for (int64_t k = 0; k < K; ++k) {
    if (k % 4 == 0) {  // a line of each group every fourth k: this tile's one in `parts`
      if (turn == 0) {
        RAYO_UNROLL
        for (int i = 0; i < kGroups; ++i)
          _mm_prefetch(reinterpret_cast<const char*>(w[i] + 8 * k) + ahead, _MM_HINT_T0);
        turn = parts;
      }
      --turn;
    }
    __m256 wv[kGroups];
    RAYO_UNROLL
    for (int i = 0; i < kGroups; ++i) wv[i] = load_half8<kType>(w[i] + 8 * k);
    RAYO_UNROLL
    for (int j = 0; j < kTok; ++j) {
      const __m256 xb = _mm256_broadcast_ss(x[j] + k);
      RAYO_UNROLL
      for (int i = 0; i < kGroups; ++i) acc[i][j] = _mm256_fmadd_ps(wv[i], xb, acc[i][j]);
    }
  }
  RAYO_UNROLL
  for (int i = 0; i < kGroups; ++i) {
    const int64_t row = 8 * (g + i);
    const int64_t n = std::min<int64_t>(8, r1 - row);
    if (n <= 0) continue;
    if (n == 8) {
      RAYO_UNROLL
      for (int j = 0; j < kTok; ++j) _mm256_storeu_ps(p.y + (t + j) * p.y_stride + row, acc[i][j]);
      continue;
    }
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    RAYO_UNROLL
    for (int j = 0; j < kTok; ++j) _mm256_maskstore_ps(p.y + (t + j) * p.y_stride + row, m, acc[i][j]);
  }
}

// The tiles over tokens t0 .. t1 - 1: kMax tokens at a time, then the rest in
// one tile; tile(kTok, t, part, parts) with the tile's number and their count.
template <int kMax, typename Tile>
inline void over_tokens(int64_t t0, int64_t t1, Tile&& tile) {
  const int parts = static_cast<int>((t1 - t0 + kMax - 1) / kMax);
  int64_t t = t0;
  int part = 0;
  for (; t + kMax <= t1; t += kMax, ++part) tile(std::integral_constant<int, kMax>{}, t, part, parts);
  const int64_t rest = t1 - t;
  [&]<int... kTok>(std::integer_sequence<int, kTok...>) {
    ((rest == kTok + 1 ? (tile(std::integral_constant<int, kTok + 1>{}, t, part, parts), 0) : 0), ...);
  }(std::make_integer_sequence<int, kMax - 1>{});
}

// The tiles of a rectangle: groups of `rows` rows (16 or 8) from r0's, by
// tile(kGroups, kTok, g, t, part, parts). Steps of one or two tokens take
// kDecodeGroups groups a tile, prompts 2 groups x up to kPromptTokens tokens.
template <int kRowsPerGroup, int kPromptTokens, typename Tile>
inline void over_tiles(int64_t r0, int64_t r1, int64_t t0, int64_t t1, Tile&& tile) {
  const int64_t g1 = (r1 + kRowsPerGroup - 1) / kRowsPerGroup;
  int64_t g = r0 / kRowsPerGroup;
  auto groups = [&](auto n_groups, auto max_tokens) {
    over_tokens<decltype(max_tokens)::value>(t0, t1, [&](auto tok, int64_t t, int part, int parts) {
      tile(n_groups, tok, g, t, part, parts);
    });
  };
  using std::integral_constant;
  if (t1 - t0 <= 2) {
    for (; g + kDecodeGroups <= g1; g += kDecodeGroups)
      groups(integral_constant<int, kDecodeGroups>{}, integral_constant<int, 2>{});
    for (; g < g1; ++g) groups(integral_constant<int, 1>{}, integral_constant<int, 2>{});
    return;
  }
  for (; g + 2 <= g1; g += 2) groups(integral_constant<int, 2>{}, integral_constant<int, kPromptTokens>{});
  if (g < g1) groups(integral_constant<int, 1>{}, integral_constant<int, kPromptTokens>{});
}

template <TensorType kType>
RAYO_AVX512 void half_avx512(const MatmulProblem& p, int64_t r0, int64_t r1, int64_t t0, int64_t t1, std::byte*) {
  over_tiles<16, kPromptTokens512>(r0, r1, t0, t1, [&](auto groups, auto tokens, int64_t g, int64_t t, int part, int parts) {
    tile_avx512<kType, decltype(groups)::value, decltype(tokens)::value>(p, g, t, r1, part, parts);
  });
}

template <TensorType kType>
RAYO_AVX2 void half_avx2(const MatmulProblem& p, int64_t r0, int64_t r1, int64_t t0, int64_t t1, std::byte*) {
  over_tiles<8, kPromptTokens2>(r0, r1, t0, t1, [&](auto groups, auto tokens, int64_t g, int64_t t, int part, int parts) {
    tile_avx2<kType, decltype(groups)::value, decltype(tokens)::value>(p, g, t, r1, part, parts);
  });
}

}  // namespace

TileKernel packed_half_kernel_avx512(TensorType type) {
  if (type == TensorType::F16) return &half_avx512<TensorType::F16>;
  if (type == TensorType::BF16) return &half_avx512<TensorType::BF16>;
  return nullptr;
}

TileKernel packed_half_kernel_avx2(TensorType type) {
  if (type == TensorType::F16) return &half_avx2<TensorType::F16>;
  if (type == TensorType::BF16) return &half_avx2<TensorType::BF16>;
  return nullptr;
}

#else
TileKernel packed_half_kernel_avx512(TensorType) { return nullptr; }
TileKernel packed_half_kernel_avx2(TensorType) { return nullptr; }
#endif

}  // namespace rayo::cpu::detail
