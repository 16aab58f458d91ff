// AVX-512 VNNI kernels over the packed layouts of packed_layouts.h with R = 16
// rows per group (one row per 32-bit lane of a zmm), for the formats that
// dominate Q4_K_M, Q5_K_M and Q8_0 models (Q4_K, Q5_K, Q6_K and Q8_0), IQ4_XS
// and the formats with blocks of 32 (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL). (The other formats run the
// AVX2 kernels on these machines.)
//
// vpdpbusd multiplies unsigned by signed bytes: the weights are unsigned
// (Q8_0: w + 128; Q6_K: its stored q = w + 32; Q4_K, Q5_K, Q4_0 ... Q5_1: q
// as stored, 0..15 or 0..31; IQ4_NL: its level + 128, looked up by vpshufb) and
// the activations stay signed; the offset is removed with the activation sums
// carried by ActBlock32/ActBlockK (sum over the block times the offset). A
// group's decoded weights stay in registers while they are applied to up to 8
// tokens (prompt processing).
#include "backends/cpu/kernels_packed.h"
#include "backends/cpu/packed_layouts.h"
#include "quant/blocks.h"

#include <cstring>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
// GCC 12 flags the deliberately undefined registers inside its AVX-512
// intrinsic headers (-Wuninitialized false positives); silence just that.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace rayo::cpu::detail {

namespace {

constexpr int64_t kRows = 16;
constexpr size_t kQ6KSuper = 3392;
// The offsets below are packed_layouts.h's at R = 16. The aligned loads of the
// K-quants' planes need 64-byte multiples.
static_assert(packed::Q4K::super(16) % 64 == 0 && packed::Q4K::hi(16) % 64 == 0 && packed::Q4K::lo(16) % 64 == 0);
static_assert(packed::IQ4XS::super(16) % 64 == 0);
static_assert(packed::Q5K::super(16) % 64 == 0 && packed::Q5K::hi(16) % 64 == 0 && packed::Q5K::lo(16) % 64 == 0);
static_assert(packed::Q6K::super(16) == kQ6KSuper && packed::Q6K::d(16) == 256 && packed::Q6K::unit(16, 1) == 320 + 384);
static_assert(packed::kQ8_0Pair(16) == 1088);

#if defined(__x86_64__)
#define RAYO_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))

RAYO_AVX512 inline __m512i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}
RAYO_AVX512 inline __m512i load512(const std::byte* p) { return _mm512_load_si512(p); }
RAYO_AVX512 inline __m512 load_f16x16(const std::byte* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Software prefetch of the weight bytes one stride ahead of the kernel, spread
// evenly over the `steps` steps of the kernel's loop over one stride (step
// `step` issues its share of the stride's cache lines). The hardware
// prefetcher alone leaves 2 cores short of the DRAM bandwidth on these
// Q4_K and Q6_K streams (its ramp restarts at every 4 KiB page and every work
// unit): measured +12% tokens/s on a Q4_K_M decode step. Q8_0, with less
// arithmetic per byte, already streams at the DRAM bandwidth for one token;
// it prefetches only for several. Prefetching past the end of the buffer is
// harmless (prefetches never fault).
template <size_t kStride, int kSteps>
RAYO_AVX512 inline void prefetch_next_stride(const std::byte* stride_begin, int step) {
  constexpr int kLines = static_cast<int>((kStride + 63) / 64);
  for (int j = step * kLines / kSteps; j < (step + 1) * kLines / kSteps; ++j)
    _mm_prefetch(reinterpret_cast<const char*>(stride_begin + kStride + 64 * j), _MM_HINT_T0);
}

template <typename Act>
inline const Act& act_block(const std::byte* row, int64_t b) {
  return reinterpret_cast<const Act*>(row)[b];
}

template <int T>
RAYO_AVX512 void q8_0_group(const std::byte* g, int64_t cols, const std::byte* const* xt, __m512* acc) {
  const int64_t nb = cols / 32;
  for (int64_t b = 0; b < nb; ++b) {
    const std::byte* pair = g + (b / 2) * 1088;
    const std::byte* qs = pair + 64 + 512 * (b % 2);
    // With several tokens a pair's arithmetic takes longer than its load, and
    // the hardware prefetcher alone lets the stream stall: prefetching two
    // pairs ahead made a 16-token step 15-30% faster. A lone token streams at
    // the bandwidth without it.
    if constexpr (T > 1) prefetch_next_stride<1088, 2>(pair + 1088, static_cast<int>(b % 2));
    __m512i w[8];
    for (int j = 0; j < 8; ++j) w[j] = load512(qs + 64 * j);
    const __m512 wd = load_f16x16(pair + 32 * (b % 2));
    for (int t = 0; t < T; ++t) {
      const ActBlock32& x = act_block<ActBlock32>(xt[t], b);
      __m512i s = _mm512_set1_epi32(-128 * x.sum);
      for (int j = 0; j < 8; ++j) s = _mm512_dpbusd_epi32(s, w[j], bcast4(x.qs + 4 * j));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(wd, _mm512_set1_ps(x.d)), acc[t]);
    }
  }
}

// The 32 values of each row's chunk at p (16 bytes of nibbles a row, 4 at a
// time): w[j] holds values 4j .. 4j+3 of every row (low nibbles 0..15 in
// w[0..3], high nibbles 16..31 in w[4..7]).
RAYO_AVX512 inline void decode_nibble_quads(const std::byte* p, __m512i* w) {
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  for (int c = 0; c < 4; ++c) {
    const __m512i v = _mm512_loadu_si512(p + 64 * c);
    w[c] = _mm512_and_si512(v, m4);
    w[4 + c] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
  }
}

// ORs bit 4 into w[0..7] from a bit plane (packed_layouts.cpp's put_bit4): bit
// j of each plane byte is bit 4 of w[j]'s byte at the same place, and a 16-bit
// shift by 4 - j lands it on bit 4 within its byte.
RAYO_AVX512 inline void or_bit4(const std::byte* plane, __m512i* w) {
  const __m512i h = _mm512_loadu_si512(plane), b4 = _mm512_set1_epi8(0x10);
  w[0] = _mm512_or_si512(w[0], _mm512_and_si512(_mm512_slli_epi16(h, 4), b4));
  w[1] = _mm512_or_si512(w[1], _mm512_and_si512(_mm512_slli_epi16(h, 3), b4));
  w[2] = _mm512_or_si512(w[2], _mm512_and_si512(_mm512_slli_epi16(h, 2), b4));
  w[3] = _mm512_or_si512(w[3], _mm512_and_si512(_mm512_slli_epi16(h, 1), b4));
  w[4] = _mm512_or_si512(w[4], _mm512_and_si512(h, b4));
  w[5] = _mm512_or_si512(w[5], _mm512_and_si512(_mm512_srli_epi16(h, 1), b4));
  w[6] = _mm512_or_si512(w[6], _mm512_and_si512(_mm512_srli_epi16(h, 2), b4));
  w[7] = _mm512_or_si512(w[7], _mm512_and_si512(_mm512_srli_epi16(h, 3), b4));
}

// The IQ4 levels + 128 (unsigned, for vpdpbusd) as a vpshufb table in every 128-bit lane.
RAYO_AVX512 inline __m512i iq4_levels_plus_128() {
  alignas(16) uint8_t table[16];
  for (int i = 0; i < 16; ++i) table[i] = static_cast<uint8_t>(quant::kIq4nlValues[i] + 128);
  return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(table)));
}

// Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL: blocks of 32 (packed::Legacy32), w = d q + m
// or d (q - offset), or d level[q]. The integer sums and the float operations
// after them are the AVX2 kernels' (kernels_packed_avx2.cpp), so both give
// the same bits.
template <TensorType kType, int T>
RAYO_AVX512 void legacy_group(const std::byte* g, int64_t cols, const std::byte* const* xt, __m512* acc) {
  constexpr packed::Legacy32 L = packed::legacy32(kType, kRows);
  constexpr bool kIq4 = kType == TensorType::IQ4_NL;
  constexpr int32_t kOffset = kType == TensorType::Q4_0 ? 8 : kType == TensorType::Q5_0 ? 16 : kIq4 ? 128 : 0;
  const int64_t nb = cols / 32;
  const __m512i levels = iq4_levels_plus_128();
  for (int64_t b = 0; b < nb; ++b) {
    const std::byte* nib = g + L.nibbles(b);
    // One block ahead per block, as the AVX2 kernels do: the rows of a group
    // interleave too finely for the hardware prefetcher to ramp up.
    for (size_t i = 0; i < L.block(); i += 64) _mm_prefetch(reinterpret_cast<const char*>(nib + 4096 + i), _MM_HINT_T0);
    __m512i w[8];
    decode_nibble_quads(nib, w);
    if constexpr (L.fifth_bit) or_bit4(g + L.bit4(b), w);
    if constexpr (kIq4)
      for (int j = 0; j < 8; ++j) w[j] = _mm512_shuffle_epi8(levels, w[j]);
    const __m512 d = load_f16x16(g + L.d(b));
    for (int t = 0; t < T; ++t) {
      const ActBlock32& x = act_block<ActBlock32>(xt[t], b);
      __m512i s = _mm512_set1_epi32(-kOffset * x.sum);
      for (int j = 0; j < 8; ++j) s = _mm512_dpbusd_epi32(s, w[j], bcast4(x.qs + 4 * j));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(d, _mm512_set1_ps(x.d)), acc[t]);
      if constexpr (L.min) acc[t] = _mm512_fmadd_ps(load_f16x16(g + L.m(b)), _mm512_set1_ps(x.s), acc[t]);
    }
  }
}

// Q4_K and Q5_K (packed::Q4K, Q5K): 8 sub-blocks of 32 with 6-bit scales and
// mins; Q5_K ORs each value's bit 4 in from its sub-block's bit plane.
template <TensorType kType, int T>
RAYO_AVX512 void k4_group(const std::byte* g, int64_t cols, const std::byte* const* xt, __m512* acc) {
  using L = std::conditional_t<kType == TensorType::Q4_K, packed::Q4K, packed::Q5K>;
  constexpr bool kFifth = kType == TensorType::Q5_K;
  constexpr size_t kSuper = L::super(kRows);
  const int64_t nb = cols / 256;
  const __m512i low4 = _mm512_set1_epi32(0xf), low2 = _mm512_set1_epi32(3);
  for (int64_t b = 0; b < nb; ++b) {
    const std::byte* sb = g + b * kSuper;
    const __m512i top_bits = load512(sb + L::hi(kRows));  // per row: bits 4-5 of every scale and min
    __m512i tot[T], mp[4];  // mp: the mins of sub-blocks 2p, 2p+1 as int16 pairs, for vpdpwssd
    for (int t = 0; t < T; ++t) tot[t] = _mm512_setzero_si512();
    for (int s = 0; s < 8; ++s) {
      prefetch_next_stride<kSuper, 8>(sb, s);
      __m512i w[8];
      decode_nibble_quads(sb + L::nibbles(kRows, s), w);
      if constexpr (kFifth) or_bit4(sb + L::bit4(kRows, s), w);
      const __m512i nibbles =
          _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sb + L::lo(kRows) + 16 * s)));
      const __m512i sc = _mm512_or_si512(
          _mm512_and_si512(nibbles, low4),
          _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(top_bits, 2 * s), low2), 4));
      const __m512i mn = _mm512_or_si512(
          _mm512_srli_epi32(nibbles, 4),
          _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(top_bits, 16 + 2 * s), low2), 4));
      mp[s / 2] = s % 2 == 0 ? mn : _mm512_or_si512(mp[s / 2], _mm512_slli_epi32(mn, 16));
      for (int t = 0; t < T; ++t) {
        const int8_t* xq = act_block<ActBlockK>(xt[t], b).qs + 32 * s;
        __m512i i = _mm512_setzero_si512();
        for (int c = 0; c < 4; ++c) {
          i = _mm512_dpbusd_epi32(i, w[c], bcast4(xq + 4 * c));
          i = _mm512_dpbusd_epi32(i, w[4 + c], bcast4(xq + 16 + 4 * c));
        }
        tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(i, sc));
      }
    }
    const __m512 d = load_f16x16(sb + L::d(kRows)), dmin = load_f16x16(sb + L::dmin(kRows));
    for (int t = 0; t < T; ++t) {
      const ActBlockK& x = act_block<ActBlockK>(xt[t], b);
      __m512i mn = _mm512_setzero_si512();
      for (int p = 0; p < 4; ++p) {
        int32_t pair;
        std::memcpy(&pair, &x.bsum32[2 * p], 4);  // (bsum32[2p], bsum32[2p+1]) as one int16 pair
        mn = _mm512_dpwssd_epi32(mn, mp[p], _mm512_set1_epi32(pair));
      }
      const __m512 xd = _mm512_set1_ps(x.d);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(tot[t]), _mm512_mul_ps(d, xd), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(mn), _mm512_mul_ps(dmin, xd), acc[t]);
    }
  }
}

// IQ4_XS (packed::IQ4XS): 8 sub-blocks of 32 IQ4 levels with a signed 6-bit
// scale each. The levels enter vpdpbusd as level + 128 (vpshufb); each
// sub-block's offset comes off with its activation sum. The integer sums and
// the float operations are the AVX2 kernel's.
template <int T>
RAYO_AVX512 void iq4_xs_group(const std::byte* g, int64_t cols, const std::byte* const* xt, __m512* acc) {
  using L = packed::IQ4XS;
  constexpr size_t kSuper = L::super(kRows);
  const int64_t nb = cols / 256;
  const __m512i levels = iq4_levels_plus_128();
  for (int64_t b = 0; b < nb; ++b) {
    const std::byte* sb = g + b * kSuper;
    __m512i tot[T];
    for (int t = 0; t < T; ++t) tot[t] = _mm512_setzero_si512();
    for (int s = 0; s < 8; ++s) {
      prefetch_next_stride<kSuper, 8>(sb, s);
      __m512i w[8];
      decode_nibble_quads(sb + L::nibbles(kRows, s), w);
      for (int j = 0; j < 8; ++j) w[j] = _mm512_shuffle_epi8(levels, w[j]);
      const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + L::sc(kRows, s))));
      for (int t = 0; t < T; ++t) {
        const ActBlockK& x = act_block<ActBlockK>(xt[t], b);
        const int8_t* xq = x.qs + 32 * s;
        __m512i i = _mm512_set1_epi32(-128 * x.bsum32[s]);
        for (int c = 0; c < 4; ++c) {
          i = _mm512_dpbusd_epi32(i, w[c], bcast4(xq + 4 * c));
          i = _mm512_dpbusd_epi32(i, w[4 + c], bcast4(xq + 16 + 4 * c));
        }
        tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(i, sc));
      }
    }
    const __m512 d = load_f16x16(sb + L::d(kRows));
    for (int t = 0; t < T; ++t)
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(tot[t]), _mm512_mul_ps(d, _mm512_set1_ps(act_block<ActBlockK>(xt[t], b).d)), acc[t]);
  }
}

// Moves the 2-bit field at bits (2c, 2c+1) of each byte to bits (4, 5); other bits are garbage.
template <int C>
RAYO_AVX512 inline __m512i q6_high_bits(__m512i qh) {
  if constexpr (C == 0) return _mm512_slli_epi16(qh, 4);
  else if constexpr (C == 1) return _mm512_slli_epi16(qh, 2);
  else if constexpr (C == 2) return qh;
  else return _mm512_srli_epi16(qh, 2);
}

template <int C>
RAYO_AVX512 inline void q6_decode_pair(const std::byte* u, __m512i qh0, __m512i qh1, __m512i* w) {
  const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
  const __m512i v = load512(u + 64 * C);
  w[C] = _mm512_or_si512(_mm512_and_si512(v, m4), _mm512_and_si512(q6_high_bits<C>(qh0), m30));
  w[4 + C] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), _mm512_and_si512(q6_high_bits<C>(qh1), m30));
}

template <int T>
RAYO_AVX512 void q6_k_group(const std::byte* g, int64_t cols, const std::byte* const* xt, __m512* acc) {
  const int64_t nb = cols / 256;
  for (int64_t b = 0; b < nb; ++b) {
    const std::byte* sb = g + b * kQ6KSuper;
    __m512i tot[T];
    for (int t = 0; t < T; ++t) tot[t] = _mm512_setzero_si512();
    for (int u = 0; u < 8; ++u) {
      prefetch_next_stride<kQ6KSuper, 8>(sb, u);
      const std::byte* unit = sb + 320 + 384 * u;
      const __m512i qh0 = load512(unit + 256), qh1 = load512(unit + 320);
      __m512i w[8];
      q6_decode_pair<0>(unit, qh0, qh1, w);
      q6_decode_pair<1>(unit, qh0, qh1, w);
      q6_decode_pair<2>(unit, qh0, qh1, w);
      q6_decode_pair<3>(unit, qh0, qh1, w);
      const __m512i sc0 = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sb + 32 * u)));
      const __m512i sc1 = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sb + 16 + 32 * u)));
      for (int t = 0; t < T; ++t) {
        const ActBlockK& x = act_block<ActBlockK>(xt[t], b);
        const int8_t* xq = x.qs + 32 * u;
        __m512i i0 = _mm512_set1_epi32(-32 * x.bsum16[2 * u]);
        __m512i i1 = _mm512_set1_epi32(-32 * x.bsum16[2 * u + 1]);
        for (int c = 0; c < 4; ++c) {
          i0 = _mm512_dpbusd_epi32(i0, w[c], bcast4(xq + 4 * c));
          i1 = _mm512_dpbusd_epi32(i1, w[4 + c], bcast4(xq + 16 + 4 * c));
        }
        tot[t] = _mm512_add_epi32(tot[t], _mm512_add_epi32(_mm512_mullo_epi32(i0, sc0), _mm512_mullo_epi32(i1, sc1)));
      }
    }
    const __m512 d = load_f16x16(sb + 256);
    for (int t = 0; t < T; ++t) {
      const __m512 xd = _mm512_set1_ps(act_block<ActBlockK>(xt[t], b).d);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(tot[t]), _mm512_mul_ps(d, xd), acc[t]);
    }
  }
}

template <int T, template <int> class Group>
RAYO_AVX512 void run_tokens(const MatmulProblem& p, const std::byte* g, int64_t row0, __mmask16 mask, int64_t t) {
  const std::byte* xt[T];
  __m512 acc[T];
  for (int j = 0; j < T; ++j) {
    xt[j] = p.xq + (t + j) * p.xq_stride;
    acc[j] = _mm512_setzero_ps();
  }
  Group<T>::run(g, p.w->cols, xt, acc);
  for (int j = 0; j < T; ++j) _mm512_mask_storeu_ps(p.y + (t + j) * p.y_stride + row0, mask, acc[j]);
}

template <int T>
struct Q8_0Group {
  RAYO_AVX512 static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m512* acc) {
    q8_0_group<T>(g, cols, xt, acc);
  }
};
template <int T>
struct Q4_KGroup {
  RAYO_AVX512 static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m512* acc) {
    k4_group<TensorType::Q4_K, T>(g, cols, xt, acc);
  }
};
template <int T>
struct Q5_KGroup {
  RAYO_AVX512 static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m512* acc) {
    k4_group<TensorType::Q5_K, T>(g, cols, xt, acc);
  }
};
template <int T>
struct IQ4_XSGroup {
  RAYO_AVX512 static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m512* acc) {
    iq4_xs_group<T>(g, cols, xt, acc);
  }
};
template <int T>
struct Q6_KGroup {
  RAYO_AVX512 static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m512* acc) {
    q6_k_group<T>(g, cols, xt, acc);
  }
};

template <TensorType kType>
struct LegacyGroup {
  template <int T>
  struct Of {
    RAYO_AVX512 static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m512* acc) {
      legacy_group<kType, T>(g, cols, xt, acc);
    }
  };
};

// Tokens [t, t + n) (1 <= n <= 8) of one group, as one tile.
template <template <int> class Group>
RAYO_AVX512 void run_tile(const MatmulProblem& p, const std::byte* g, int64_t row, __mmask16 mask, int64_t t, int64_t n) {
  switch (n) {
    case 1: return run_tokens<1, Group>(p, g, row, mask, t);
    case 2: return run_tokens<2, Group>(p, g, row, mask, t);
    case 3: return run_tokens<3, Group>(p, g, row, mask, t);
    case 4: return run_tokens<4, Group>(p, g, row, mask, t);
    case 5: return run_tokens<5, Group>(p, g, row, mask, t);
    case 6: return run_tokens<6, Group>(p, g, row, mask, t);
    case 7: return run_tokens<7, Group>(p, g, row, mask, t);
    default: return run_tokens<8, Group>(p, g, row, mask, t);
  }
}

// Rows [r0, r1) (r0 a multiple of 16) x tokens [t0, t1): per group, the tokens
// in the fewest tiles of at most 8, of even sizes (11 tokens: 6 + 5, not
// 8 + 2 + 1). Each tile decodes the group's weights once, so fewer tiles is
// less decoding: it matters for a server's decode steps of a few tokens each.
template <template <int> class Group>
RAYO_AVX512 void packed_tile(const MatmulProblem& p, int64_t r0, int64_t r1, int64_t t0, int64_t t1, std::byte*) {
  const PackedWeight& pw = *p.w->packed;
  for (int64_t row = r0; row < r1; row += kRows) {
    const std::byte* g = pw.data.get() + (row / kRows) * pw.group_bytes;
    const int64_t n_rows = std::min<int64_t>(kRows, r1 - row);
    const __mmask16 mask = static_cast<__mmask16>((1u << n_rows) - 1);
    int64_t tiles = (t1 - t0 + 7) / 8;
    for (int64_t t = t0; t < t1; --tiles) {
      const int64_t n = (t1 - t + tiles - 1) / tiles;
      run_tile<Group>(p, g, row, mask, t, n);
      t += n;
    }
  }
}
#endif

}  // namespace

TileKernel packed_kernel_avx512(TensorType type) {
#if defined(__x86_64__)
  switch (type) {
    case TensorType::Q8_0: return &packed_tile<Q8_0Group>;
    case TensorType::Q4_K: return &packed_tile<Q4_KGroup>;
    case TensorType::Q5_K: return &packed_tile<Q5_KGroup>;
    case TensorType::Q6_K: return &packed_tile<Q6_KGroup>;
    case TensorType::Q4_0: return &packed_tile<LegacyGroup<TensorType::Q4_0>::Of>;
    case TensorType::Q4_1: return &packed_tile<LegacyGroup<TensorType::Q4_1>::Of>;
    case TensorType::Q5_0: return &packed_tile<LegacyGroup<TensorType::Q5_0>::Of>;
    case TensorType::Q5_1: return &packed_tile<LegacyGroup<TensorType::Q5_1>::Of>;
    case TensorType::IQ4_NL: return &packed_tile<LegacyGroup<TensorType::IQ4_NL>::Of>;
    case TensorType::IQ4_XS: return &packed_tile<IQ4_XSGroup>;
    default: break;
  }
#else
  (void)type;
#endif
  return nullptr;
}

}  // namespace rayo::cpu::detail
