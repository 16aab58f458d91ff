// AVX2 kernels over the packed layouts of packed_layouts.h with R = 8 rows per
// group (one row per 32-bit lane of a ymm), for every quantized format.
//
// AVX2 has no vpdpbusd: a quad product is vpmaddubsw (unsigned weight bytes
// times signed activation bytes, adjacent pairs summed into int16) and then
// vpmaddwd (int16 pairs summed into int32, times an int16 factor: 1, or the
// sub-block's scale, which saves a separate multiply). vpmaddubsw saturates
// past 32767, so each format sums only as many quads in int16 as cannot
// overflow: 8 for 4-bit weights (8 * 2 * 15 * 127 = 30480), 4 for 5-bit, 2 for
// 6-bit, 4 (one 16-value sub-block) for Q2_K and Q3_K. Signed weights (Q8_0,
// the IQ4 levels) take the sign trick, |w| times x with w's sign moved onto x
// (vpsignb), one quad per vpmaddwd since |w| x can reach 2 * 128 * 127.
//
// A tile is a group of 8 rows times up to 4 tokens: the group's weights are
// decoded once per chunk and multiplied with every token of the tile. Integer
// sums are exact and each token's float operations run in the same order
// whatever the tile, so a token's outputs do not depend on its batch.
#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels_packed.h"
#include "backends/cpu/packed_layouts.h"
#include "quant/blocks.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rayo::cpu::detail {

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace {

using namespace packed;

constexpr int R = 8;
constexpr int kMaxTile = 4;  // tokens per tile: 8 decoded quads + 4 accumulators fill the 16 ymm registers

inline __m256i load_v(const std::byte* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m128i load_8(const std::byte* p) { return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)); }
inline __m256 load_f16x8(const std::byte* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}
// Two int16 values as one int32 lane: (p[0], p[1]).
inline __m256i bcast_pair(const int16_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// vpmaddwd factors, one int16 pair per row: (a_r, b_r) from two rows of R bytes.
inline __m256i pairs_u8(__m128i a, __m128i b) { return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b)); }
inline __m256i pairs_s8(__m128i a, __m128i b) { return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b)); }
// (v_r, v_r) from int32 lanes holding 0 <= v < 2^15.
inline __m256i pairs_i32(__m256i v) { return _mm256_or_si256(v, _mm256_slli_epi32(v, 16)); }

#ifndef PF_DIST
#define PF_DIST 4096
#endif
// Software prefetch of `bytes` bytes (whole lines) PF_DIST bytes past p.
template <size_t kBytes>
inline void prefetch_ahead(const std::byte* p) {
  for (size_t i = 0; i < kBytes; i += 64) _mm_prefetch(reinterpret_cast<const char*>(p + PF_DIST + i), _MM_HINT_T0);
}

// An empty asm that claims to change v: GCC may not move the adds on either
// side of it across, which stops it from reassociating a long chain of exact
// integer adds into a tree that needs more than AVX2's 16 registers (it
// spilled half of a 4-token tile's accumulators without this). Free at run time.
inline void pin(__m256i& v) { asm("" : "+x"(v)); }

template <typename Act>
inline const Act& act_block(const std::byte* row, int64_t b) {
  return reinterpret_cast<const Act*>(row)[b];
}

// ---- decoding of one chunk (32 values of each row) into w[j] = values 4j .. 4j+3

inline void decode_nibbles(const std::byte* p, __m256i* w) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  for (int c = 0; c < 4; ++c) {
    const __m256i v = load_v(p + 4 * R * c);
    w[c] = _mm256_and_si256(v, m4);
    w[4 + c] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  }
}

// ORs bit 4 in from a bit4 plane. Moving bit k of each byte to bit 4 with a
// 16-bit shift by 4 - k is exact for the bit that lands on bit 4 (|4 - k| <= 4
// keeps it within its byte); the mask drops the rest.
inline void add_bit4(const std::byte* p, __m256i* w) {
  const __m256i h = load_v(p), b4 = _mm256_set1_epi8(0x10);
  w[0] = _mm256_or_si256(w[0], _mm256_and_si256(_mm256_slli_epi16(h, 4), b4));
  w[1] = _mm256_or_si256(w[1], _mm256_and_si256(_mm256_slli_epi16(h, 3), b4));
  w[2] = _mm256_or_si256(w[2], _mm256_and_si256(_mm256_slli_epi16(h, 2), b4));
  w[3] = _mm256_or_si256(w[3], _mm256_and_si256(_mm256_slli_epi16(h, 1), b4));
  w[4] = _mm256_or_si256(w[4], _mm256_and_si256(h, b4));
  w[5] = _mm256_or_si256(w[5], _mm256_and_si256(_mm256_srli_epi16(h, 1), b4));
  w[6] = _mm256_or_si256(w[6], _mm256_and_si256(_mm256_srli_epi16(h, 2), b4));
  w[7] = _mm256_or_si256(w[7], _mm256_and_si256(_mm256_srli_epi16(h, 3), b4));
}

inline void decode_crumbs(const std::byte* p, __m256i* w) {
  const __m256i m2 = _mm256_set1_epi8(0x03);
  for (int v = 0; v < 2; ++v) {
    const __m256i c = load_v(p + 4 * R * v);
    w[4 * v + 0] = _mm256_and_si256(c, m2);
    w[4 * v + 1] = _mm256_and_si256(_mm256_srli_epi16(c, 2), m2);
    w[4 * v + 2] = _mm256_and_si256(_mm256_srli_epi16(c, 4), m2);
    w[4 * v + 3] = _mm256_and_si256(_mm256_srli_epi16(c, 6), m2);
  }
}

// ORs bit 2 in from a bit2 plane (bit j of each byte for w[j]); as add_bit4.
inline void add_bit2(const std::byte* p, __m256i* w) {
  const __m256i h = load_v(p), b2 = _mm256_set1_epi8(0x04);
  w[0] = _mm256_or_si256(w[0], _mm256_and_si256(_mm256_slli_epi16(h, 2), b2));
  w[1] = _mm256_or_si256(w[1], _mm256_and_si256(_mm256_slli_epi16(h, 1), b2));
  w[2] = _mm256_or_si256(w[2], _mm256_and_si256(h, b2));
  w[3] = _mm256_or_si256(w[3], _mm256_and_si256(_mm256_srli_epi16(h, 1), b2));
  w[4] = _mm256_or_si256(w[4], _mm256_and_si256(_mm256_srli_epi16(h, 2), b2));
  w[5] = _mm256_or_si256(w[5], _mm256_and_si256(_mm256_srli_epi16(h, 3), b2));
  w[6] = _mm256_or_si256(w[6], _mm256_and_si256(_mm256_srli_epi16(h, 4), b2));
  w[7] = _mm256_or_si256(w[7], _mm256_and_si256(_mm256_srli_epi16(h, 5), b2));
}

// Q6_K: bits 4-5 from the two qh vectors (field j of each byte for w[j], w[4 + j]).
inline void add_q6_high_bits(const std::byte* p, __m256i* w) {
  const __m256i h0 = load_v(p), h1 = load_v(p + 4 * R), m30 = _mm256_set1_epi8(0x30);
  w[0] = _mm256_or_si256(w[0], _mm256_and_si256(_mm256_slli_epi16(h0, 4), m30));
  w[1] = _mm256_or_si256(w[1], _mm256_and_si256(_mm256_slli_epi16(h0, 2), m30));
  w[2] = _mm256_or_si256(w[2], _mm256_and_si256(h0, m30));
  w[3] = _mm256_or_si256(w[3], _mm256_and_si256(_mm256_srli_epi16(h0, 2), m30));
  w[4] = _mm256_or_si256(w[4], _mm256_and_si256(_mm256_slli_epi16(h1, 4), m30));
  w[5] = _mm256_or_si256(w[5], _mm256_and_si256(_mm256_slli_epi16(h1, 2), m30));
  w[6] = _mm256_or_si256(w[6], _mm256_and_si256(h1, m30));
  w[7] = _mm256_or_si256(w[7], _mm256_and_si256(_mm256_srli_epi16(h1, 2), m30));
}

// ---- products of one decoded chunk with one token's 32 activation bytes

// Unsigned weights: per row, sum over groups g of kQ quads of factor[g] times
// the group's products (kQ quads summed in int16: the caller's format bounds
// them below 32768).
template <int kQ>
inline __m256i dot_chunk(const __m256i* w, const int8_t* x, const __m256i* factor) {
  __m256i s = _mm256_setzero_si256();
  for (int g = 0; g < 8 / kQ; ++g) {
    __m256i p = _mm256_maddubs_epi16(w[kQ * g], bcast4(x + 4 * kQ * g));
    for (int j = 1; j < kQ; ++j) {
      p = _mm256_add_epi16(p, _mm256_maddubs_epi16(w[kQ * g + j], bcast4(x + 4 * (kQ * g + j))));
      pin(p);
    }
    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, factor[g]));
  }
  return s;
}

// Signed weights w (|w| precomputed as aw): factor times the quad's products.
inline __m256i dot_quad_signed(__m256i w, __m256i aw, const int8_t* x, __m256i factor) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(bcast4(x), w)), factor);
}

// The IQ4 levels as a vpshufb table in both 128-bit lanes.
inline __m256i iq4_levels() {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIq4nlValues));
  return _mm256_set_m128i(t, t);
}

// Chunk of IQ4 indices (nibbles) times T tokens, added to s[t] with `factor`.
template <int T>
inline void iq4_chunk(const std::byte* nib, const std::byte* const* xt_qs, int64_t x_offset, __m256i factor,
                      __m256i* s) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), levels = iq4_levels();
  for (int c = 0; c < 4; ++c) {
    const __m256i v = load_v(nib + 4 * R * c);
    const __m256i lo = _mm256_shuffle_epi8(levels, _mm256_and_si256(v, m4));
    const __m256i hi = _mm256_shuffle_epi8(levels, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
    const __m256i alo = _mm256_abs_epi8(lo), ahi = _mm256_abs_epi8(hi);
    for (int t = 0; t < T; ++t) {
      const int8_t* x = reinterpret_cast<const int8_t*>(xt_qs[t]) + x_offset;
      s[t] = _mm256_add_epi32(s[t], dot_quad_signed(lo, alo, x + 4 * c, factor));
      s[t] = _mm256_add_epi32(s[t], dot_quad_signed(hi, ahi, x + 16 + 4 * c, factor));
      pin(s[t]);
    }
  }
}

// ---- the formats: run<T>(group, cols, activation rows, acc) adds the group's
// products with T tokens to acc[t] (one float per row)

// Q4_0, Q4_1, Q5_0, Q5_1: blocks of 32; w = d q + m, or d (q - offset).
template <TensorType kType>
struct Legacy {
  static constexpr bool kFifth = kType == TensorType::Q5_0 || kType == TensorType::Q5_1;
  static constexpr bool kMin = kType == TensorType::Q4_1 || kType == TensorType::Q5_1;
  static constexpr int kOffset = kType == TensorType::Q4_0 ? 8 : kType == TensorType::Q5_0 ? 16 : 0;

  template <int T>
  static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m256* acc) {
    constexpr Legacy32 L = legacy32(kType, R);
    const int64_t nb = cols / 32;
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i factor[2] = {ones, ones};
    for (int64_t b = 0; b < nb; ++b) {
      prefetch_ahead<L.block()>(g + L.nibbles(b));
      __m256i w[8];
      decode_nibbles(g + L.nibbles(b), w);
      if constexpr (kFifth) add_bit4(g + L.bit4(b), w);
      const __m256 d = load_f16x8(g + L.d(b));
      for (int t = 0; t < T; ++t) {
        const ActBlock32& x = act_block<ActBlock32>(xt[t], b);
        __m256i s = dot_chunk<kFifth ? 4 : 8>(w, x.qs, factor);
        if constexpr (kOffset != 0) s = _mm256_sub_epi32(s, _mm256_set1_epi32(kOffset * x.sum));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(d, _mm256_set1_ps(x.d)), acc[t]);
        if constexpr (kMin) {
          const __m256 m = load_f16x8(g + L.m(b));
          acc[t] = _mm256_fmadd_ps(m, _mm256_set1_ps(x.s), acc[t]);
        }
      }
    }
  }
};

struct Q8_0Fmt {
  template <int T>
  static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m256* acc) {
    const int64_t nb = cols / 32;
    const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8(static_cast<char>(0x80));
    for (int64_t b = 0; b < nb; ++b) {
      const std::byte* pair = g + (b / 2) * kQ8_0Pair(R);
      const std::byte* qs = pair + 4 * R + 32 * R * (b % 2);
      prefetch_ahead<kQ8_0Pair(R) / 2>(pair + kQ8_0Pair(R) / 2 * (b % 2));
      __m256i s[T];
      for (int t = 0; t < T; ++t) s[t] = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i w = _mm256_xor_si256(load_v(qs + 4 * R * j), flip), aw = _mm256_abs_epi8(w);
        for (int t = 0; t < T; ++t) {
          s[t] = _mm256_add_epi32(s[t], dot_quad_signed(w, aw, act_block<ActBlock32>(xt[t], b).qs + 4 * j, ones));
          pin(s[t]);
        }
      }
      const __m256 d = load_f16x8(pair + 2 * R * (b % 2));
      for (int t = 0; t < T; ++t)
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]), _mm256_mul_ps(d, _mm256_set1_ps(act_block<ActBlock32>(xt[t], b).d)), acc[t]);
    }
  }
};

struct IQ4_NLFmt {
  template <int T>
  static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m256* acc) {
    constexpr Legacy32 L = legacy32(TensorType::IQ4_NL, R);
    const int64_t nb = cols / 32;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; ++b) {
      prefetch_ahead<L.block()>(g + L.nibbles(b));
      __m256i s[T];
      for (int t = 0; t < T; ++t) s[t] = _mm256_setzero_si256();
      iq4_chunk<T>(g + L.nibbles(b), xt, b * static_cast<int64_t>(sizeof(ActBlock32)) + offsetof(ActBlock32, qs), ones, s);
      const __m256 d = load_f16x8(g + L.d(b));
      for (int t = 0; t < T; ++t)
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]), _mm256_mul_ps(d, _mm256_set1_ps(act_block<ActBlock32>(xt[t], b).d)), acc[t]);
    }
  }
};

// Q4_K, Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins (lo/hi planes).
template <TensorType kType>
struct K4 {
  using L = std::conditional_t<kType == TensorType::Q4_K, Q4K, Q5K>;
  static constexpr bool kFifth = kType == TensorType::Q5_K;

  template <int T>
  static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m256* acc) {
    const int64_t nb = cols / 256;
    const __m256i low4 = _mm256_set1_epi32(0xf), low2 = _mm256_set1_epi32(3);
    for (int64_t b = 0; b < nb; ++b) {
      const std::byte* sb = g + b * L::super(R);
      const __m256i top = load_v(sb + L::hi(R));  // per row: bits 4-5 of every scale and min
      __m256i tot[T];
      for (int t = 0; t < T; ++t) tot[t] = _mm256_setzero_si256();
      for (int s = 0; s < 8; ++s) {
        prefetch_ahead<L::super(R) / 8>(sb + L::super(R) / 8 * s);
        __m256i w[8];
        decode_nibbles(sb + L::nibbles(R, s), w);
        if constexpr (kFifth) add_bit4(sb + Q5K::bit4(R, s), w);
        const __m256i nib = _mm256_cvtepu8_epi32(load_8(sb + L::lo(R) + R * s));
        const __m256i sc = _mm256_or_si256(_mm256_and_si256(nib, low4),
                                           _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(top, 2 * s), low2), 4));
        const __m256i scp = pairs_i32(sc);
        const __m256i factor[2] = {scp, scp};
        for (int t = 0; t < T; ++t) {
          tot[t] = _mm256_add_epi32(tot[t], dot_chunk<kFifth ? 4 : 8>(w, act_block<ActBlockK>(xt[t], b).qs + 32 * s, factor));
          pin(tot[t]);
        }
      }
      // The mins, as int16 pairs (min 2p, min 2p+1) per row against the activation sums of those sub-blocks.
      __m256i mins[4];
      for (int p = 0; p < 4; ++p) {
        __m256i mn[2];
        for (int h = 0; h < 2; ++h) {
          const int s = 2 * p + h;
          const __m256i nib = _mm256_cvtepu8_epi32(load_8(sb + L::lo(R) + R * s));
          mn[h] = _mm256_or_si256(_mm256_srli_epi32(nib, 4),
                                  _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(top, 16 + 2 * s), low2), 4));
        }
        mins[p] = _mm256_or_si256(mn[0], _mm256_slli_epi32(mn[1], 16));
      }
      const __m256 d = load_f16x8(sb + L::d(R)), dmin = load_f16x8(sb + L::dmin(R));
      for (int t = 0; t < T; ++t) {
        const ActBlockK& x = act_block<ActBlockK>(xt[t], b);
        __m256i mn = _mm256_setzero_si256();
        for (int p = 0; p < 4; ++p) mn = _mm256_add_epi32(mn, _mm256_madd_epi16(mins[p], bcast_pair(x.bsum32 + 2 * p)));
        const __m256 xd = _mm256_set1_ps(x.d);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(tot[t]), _mm256_mul_ps(d, xd), acc[t]);
        acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mn), _mm256_mul_ps(dmin, xd), acc[t]);
      }
    }
  }
};

// sum over the 16 sub-blocks of sc[s] * bsum16[s], with sc as R-byte signed
// rows at `sc` (stride R): the offset terms of Q3_K and Q6_K.
inline __m256i signed_scales_times_sums(const std::byte* sc, const ActBlockK& x) {
  __m256i s = _mm256_setzero_si256();
  for (int p = 0; p < 8; ++p) {
    const __m256i pairs = pairs_s8(load_8(sc + R * 2 * p), load_8(sc + R * (2 * p + 1)));
    s = _mm256_add_epi32(s, _mm256_madd_epi16(pairs, bcast_pair(x.bsum16 + 2 * p)));
  }
  return s;
}

// Q6_K: u = q + 32 (0..63), 16 sub-blocks of 16 with int8 scales.
struct Q6_KFmt {
  template <int T>
  static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m256* acc) {
    const int64_t nb = cols / 256;
    for (int64_t b = 0; b < nb; ++b) {
      const std::byte* sb = g + b * Q6K::super(R);
      __m256i tot[T];
      for (int t = 0; t < T; ++t) tot[t] = _mm256_setzero_si256();
      for (int u = 0; u < 8; ++u) {
        prefetch_ahead<Q6K::super(R) / 8>(sb + Q6K::super(R) / 8 * u);
        const std::byte* unit = sb + Q6K::unit(R, u);
        __m256i w[8];
        decode_nibbles(unit, w);
        add_q6_high_bits(unit + 16 * R, w);
        // w[0..3] are sub-block 2u, w[4..7] sub-block 2u + 1; 2 quads per int16 sum.
        const __m128i s0 = load_8(sb + Q6K::sc(R, 2 * u)), s1 = load_8(sb + Q6K::sc(R, 2 * u + 1));
        const __m256i f0 = pairs_s8(s0, s0), f1 = pairs_s8(s1, s1);
        const __m256i factor[4] = {f0, f0, f1, f1};
        for (int t = 0; t < T; ++t) {
          tot[t] = _mm256_add_epi32(tot[t], dot_chunk<2>(w, act_block<ActBlockK>(xt[t], b).qs + 32 * u, factor));
          pin(tot[t]);
        }
      }
      const __m256 d = load_f16x8(sb + Q6K::d(R));
      for (int t = 0; t < T; ++t) {
        const ActBlockK& x = act_block<ActBlockK>(xt[t], b);
        const __m256i s = _mm256_sub_epi32(tot[t], _mm256_slli_epi32(signed_scales_times_sums(sb + Q6K::sc(R, 0), x), 5));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(d, _mm256_set1_ps(x.d)), acc[t]);
      }
    }
  }
};

// Q2_K: u = 0..3, 16 sub-blocks of 16 with 4-bit scales and mins.
struct Q2_KFmt {
  template <int T>
  static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m256* acc) {
    const int64_t nb = cols / 256;
    const __m128i m4 = _mm_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; ++b) {
      const std::byte* sb = g + b * Q2K::super(R);
      __m256i tot[T];
      for (int t = 0; t < T; ++t) tot[t] = _mm256_setzero_si256();
      for (int k = 0; k < 8; ++k) {
        prefetch_ahead<Q2K::super(R) / 8>(sb + Q2K::super(R) / 8 * k);
        __m256i w[8];
        decode_crumbs(sb + Q2K::crumbs(R, k), w);
        const __m128i s0 = _mm_and_si128(load_8(sb + Q2K::sc(R, 2 * k)), m4);
        const __m128i s1 = _mm_and_si128(load_8(sb + Q2K::sc(R, 2 * k + 1)), m4);
        const __m256i factor[2] = {pairs_u8(s0, s0), pairs_u8(s1, s1)};
        for (int t = 0; t < T; ++t) {
          tot[t] = _mm256_add_epi32(tot[t], dot_chunk<4>(w, act_block<ActBlockK>(xt[t], b).qs + 32 * k, factor));
          pin(tot[t]);
        }
      }
      const __m256 d = load_f16x8(sb + Q2K::d(R)), dmin = load_f16x8(sb + Q2K::dmin(R));
      for (int t = 0; t < T; ++t) {
        const ActBlockK& x = act_block<ActBlockK>(xt[t], b);
        __m256i mn = _mm256_setzero_si256();
        for (int p = 0; p < 8; ++p) {
          const __m128i a = _mm_and_si128(_mm_srli_epi16(load_8(sb + Q2K::sc(R, 2 * p)), 4), m4);
          const __m128i c = _mm_and_si128(_mm_srli_epi16(load_8(sb + Q2K::sc(R, 2 * p + 1)), 4), m4);
          mn = _mm256_add_epi32(mn, _mm256_madd_epi16(pairs_u8(a, c), bcast_pair(x.bsum16 + 2 * p)));
        }
        const __m256 xd = _mm256_set1_ps(x.d);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(tot[t]), _mm256_mul_ps(d, xd), acc[t]);
        acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mn), _mm256_mul_ps(dmin, xd), acc[t]);
      }
    }
  }
};

// Q3_K: u = q + 4 (0..7), 16 sub-blocks of 16 with signed 6-bit scales.
struct Q3_KFmt {
  template <int T>
  static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m256* acc) {
    const int64_t nb = cols / 256;
    for (int64_t b = 0; b < nb; ++b) {
      const std::byte* sb = g + b * Q3K::super(R);
      __m256i tot[T];
      for (int t = 0; t < T; ++t) tot[t] = _mm256_setzero_si256();
      for (int k = 0; k < 8; ++k) {
        prefetch_ahead<Q3K::super(R) / 8>(sb + Q3K::super(R) / 8 * k);
        __m256i w[8];
        decode_crumbs(sb + Q3K::crumbs(R, k), w);
        add_bit2(sb + Q3K::bit2(R, k), w);
        const __m128i s0 = load_8(sb + Q3K::sc(R, 2 * k)), s1 = load_8(sb + Q3K::sc(R, 2 * k + 1));
        const __m256i factor[2] = {pairs_s8(s0, s0), pairs_s8(s1, s1)};
        for (int t = 0; t < T; ++t) {
          tot[t] = _mm256_add_epi32(tot[t], dot_chunk<4>(w, act_block<ActBlockK>(xt[t], b).qs + 32 * k, factor));
          pin(tot[t]);
        }
      }
      const __m256 d = load_f16x8(sb + Q3K::d(R));
      for (int t = 0; t < T; ++t) {
        const ActBlockK& x = act_block<ActBlockK>(xt[t], b);
        const __m256i s = _mm256_sub_epi32(tot[t], _mm256_slli_epi32(signed_scales_times_sums(sb + Q3K::sc(R, 0), x), 2));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(d, _mm256_set1_ps(x.d)), acc[t]);
      }
    }
  }
};

struct IQ4_XSFmt {
  template <int T>
  static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m256* acc) {
    const int64_t nb = cols / 256;
    for (int64_t b = 0; b < nb; ++b) {
      const std::byte* sb = g + b * IQ4XS::super(R);
      __m256i tot[T];
      for (int t = 0; t < T; ++t) tot[t] = _mm256_setzero_si256();
      const int64_t x_offset = b * static_cast<int64_t>(sizeof(ActBlockK)) + offsetof(ActBlockK, qs);
      for (int s = 0; s < 8; ++s) {
        prefetch_ahead<IQ4XS::super(R) / 8>(sb + IQ4XS::super(R) / 8 * s);
        const __m128i sc = load_8(sb + IQ4XS::sc(R, s));
        iq4_chunk<T>(sb + IQ4XS::nibbles(R, s), xt, x_offset + 32 * s, pairs_s8(sc, sc), tot);
      }
      const __m256 d = load_f16x8(sb + IQ4XS::d(R));
      for (int t = 0; t < T; ++t)
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(tot[t]), _mm256_mul_ps(d, _mm256_set1_ps(act_block<ActBlockK>(xt[t], b).d)), acc[t]);
    }
  }
};

// ---- tiles

template <int T, class Fmt>
void run_tokens(const MatmulProblem& p, const std::byte* g, int64_t row0, int64_t n_rows, int64_t t) {
  const std::byte* xt[T];
  __m256 acc[T];
  for (int j = 0; j < T; ++j) {
    xt[j] = p.xq + (t + j) * p.xq_stride;
    acc[j] = _mm256_setzero_ps();
  }
  Fmt::template run<T>(g, p.w->cols, xt, acc);
  if (n_rows == R) {
    for (int j = 0; j < T; ++j) _mm256_storeu_ps(p.y + (t + j) * p.y_stride + row0, acc[j]);
  } else {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n_rows)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int j = 0; j < T; ++j) _mm256_maskstore_ps(p.y + (t + j) * p.y_stride + row0, mask, acc[j]);
  }
}

template <class Fmt>
void run_tile(const MatmulProblem& p, const std::byte* g, int64_t row, int64_t n_rows, int64_t t, int64_t n) {
  switch (n) {
    case 1: return run_tokens<1, Fmt>(p, g, row, n_rows, t);
    case 2: return run_tokens<2, Fmt>(p, g, row, n_rows, t);
    case 3: return run_tokens<3, Fmt>(p, g, row, n_rows, t);
    default: return run_tokens<4, Fmt>(p, g, row, n_rows, t);
  }
}

// Rows [r0, r1) (r0 a multiple of R) x tokens [t0, t1): per group, the tokens
// in the fewest tiles of at most kMaxTile, of near-equal sizes.
template <class Fmt>
void packed_tile(const MatmulProblem& p, int64_t r0, int64_t r1, int64_t t0, int64_t t1, std::byte*) {
  const PackedWeight& pw = *p.w->packed;
  for (int64_t row = r0; row < r1; row += R) {
    const std::byte* g = pw.data.get() + (row / R) * pw.group_bytes;
    const int64_t n_rows = std::min<int64_t>(R, r1 - row);
    int64_t tiles = (t1 - t0 + kMaxTile - 1) / kMaxTile;
    for (int64_t t = t0; t < t1; --tiles) {
      const int64_t n = (t1 - t + tiles - 1) / tiles;
      run_tile<Fmt>(p, g, row, n_rows, t, n);
      t += n;
    }
  }
}

}  // namespace

#pragma GCC pop_options
#endif

TileKernel packed_kernel_avx2(TensorType type) {
#if defined(__x86_64__)
  switch (type) {
    case TensorType::Q4_0: return &packed_tile<Legacy<TensorType::Q4_0>>;
    case TensorType::Q4_1: return &packed_tile<Legacy<TensorType::Q4_1>>;
    case TensorType::Q5_0: return &packed_tile<Legacy<TensorType::Q5_0>>;
    case TensorType::Q5_1: return &packed_tile<Legacy<TensorType::Q5_1>>;
    case TensorType::Q8_0: return &packed_tile<Q8_0Fmt>;
    case TensorType::IQ4_NL: return &packed_tile<IQ4_NLFmt>;
    case TensorType::Q2_K: return &packed_tile<Q2_KFmt>;
    case TensorType::Q3_K: return &packed_tile<Q3_KFmt>;
    case TensorType::Q4_K: return &packed_tile<K4<TensorType::Q4_K>>;
    case TensorType::Q5_K: return &packed_tile<K4<TensorType::Q5_K>>;
    case TensorType::Q6_K: return &packed_tile<Q6_KFmt>;
    case TensorType::IQ4_XS: return &packed_tile<IQ4_XSFmt>;
    default: break;
  }
#else
  (void)type;
#endif
  return nullptr;
}

}  // namespace rayo::cpu::detail
