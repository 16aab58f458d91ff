// Row-interleaved ("packed") weights and their AVX-512 VNNI kernels for the
// formats that dominate Q4_K_M and Q8_0 models: Q4_K, Q6_K and Q8_0.
//
// Idea: 16 consecutive weight rows form a group, and the group's values are
// stored so that one 64-byte load holds 4 consecutive values (a "quad") of
// each of the 16 rows, one row per 32-bit lane. vpdpbusd then multiplies the
// quad of every row by the same 4 activation bytes broadcast to all lanes and
// accumulates per row: 64 multiply-adds per instruction, and the 16 lanes end
// up holding the 16 outputs, so no horizontal reduction is ever needed and the
// results are stored as one vector per token. A group's decoded weights stay
// in registers while they are applied to up to 8 tokens (prompt processing).
//
// vpdpbusd multiplies unsigned by signed bytes: the weights are made unsigned
// (Q8_0: w + 128; Q6_K: its stored q = w + 32; Q4_K: q is already 0..15) and
// the activations stay signed; the offset is removed with the activation sums
// carried by ActBlock32/ActBlockK (sum over the block times the offset).
//
// Rows past the end of the matrix are padded with zero scales. Layouts, per
// group (all offsets in bytes; "row" is the lane 0..15; f16 = IEEE half):
//
// Q8_0, per pair of blocks of 32 values (1088 B; a last odd block is paired
// with a zero block), in reading order:
//   d [2 blocks][16 rows]           f16                 @0   (64)
//   qs[2 blocks][8 quads][16 rows][4]  u8 = w + 128     @64  (1024)
// Q4_K, per super-block of 256 (2304 B: exactly the 16 rows' blocks, so the
// kernels read no more bytes than the file holds):
//   qs[8 sub][4 c][16 rows][4]   low nibble  = q[32 sub + 4c + i],
//                                high nibble = q[32 sub + 16 + 4c + i]   @0    (2048)
//   lo[8 sub][16 rows]           low nibble  = scale bits 0-3,
//                                high nibble = min bits 0-3               @2048 (128)
//   hi[16 rows]                  u32: bits 2s, 2s+1 = scale bits 4-5 of sub s,
//                                bits 16+2s, 17+2s = min bits 4-5 of sub s @2176 (64)
//   d[16 rows], dmin[16 rows]    f16                                      @2240 (64)
// Q6_K, per super-block of 256 (3392 B: the 3360 of the blocks + 32 padding),
// in the order the kernel reads it so that the hardware prefetcher sees one
// forward stream:
//   sc[16 sub][16 rows]          int8 scale                               @0   (256)
//   d[16 rows]                   f16 (+ 32 B padding)                     @256 (64)
//   then for each unit u of 32 values, at 320 + 384 u:
//   ql[4 c][16 rows][4]          low nibble  = low 4 bits of q[32u + 4c + i],
//                                high nibble = low 4 bits of q[32u + 16 + 4c + i]  (256)
//   qh[2 h][16 rows][4]          bits 2j, 2j+1 of byte i = top 2 bits of
//                                q[32u + 16h + 4j + i]  (j = 0..3)                 (128)
#include "backends/cpu/kernels_packed.h"

#include <cstring>

#include "common/error.h"
#include "common/half.h"
#include "quant/blocks.h"
#include "quant/k_scales.h"

#if defined(__x86_64__)
#include <immintrin.h>
// GCC 12 flags the deliberately undefined registers inside its AVX-512
// intrinsic headers (-Wuninitialized false positives); silence just that.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace rayo::cpu::detail {

using namespace rayo::quant;

namespace {

constexpr int64_t kRows = kPackRows;
constexpr size_t kQ4KSuper = 2304, kQ6KSuper = 3392;

size_t group_bytes(TensorType type, int64_t cols) {
  switch (type) {
    case TensorType::Q8_0: return static_cast<size_t>((cols / 32 + 1) / 2) * 1088;
    case TensorType::Q4_K: return static_cast<size_t>(cols / 256) * kQ4KSuper;
    case TensorType::Q6_K: return static_cast<size_t>(cols / 256) * kQ6KSuper;
    default: fail("no packed layout for ", type_name(type));
  }
}

void put_f16(std::byte* p, uint16_t h) { std::memcpy(p, &h, 2); }

void pack_q8_0(const void* data, int64_t rows, int64_t cols, PackedWeight& pw) {
  const int64_t nb = cols / 32;
  for (int64_t g = 0; g < pw.groups; ++g) {
    std::byte* group = pw.data.get() + g * pw.group_bytes;
    for (int64_t r = 0; r < kRows && g * kRows + r < rows; ++r) {
      const auto* blk = static_cast<const BlockQ8_0*>(data) + (g * kRows + r) * nb;
      for (int64_t b = 0; b < nb; ++b) {
        std::byte* pair = group + (b / 2) * 1088;
        put_f16(pair + 32 * (b % 2) + 2 * r, blk[b].d);
        auto* qs = reinterpret_cast<uint8_t*>(pair + 64 + 512 * (b % 2));
        for (int j = 0; j < 8; ++j)
          for (int i = 0; i < 4; ++i)
            qs[64 * j + 4 * r + i] = static_cast<uint8_t>(blk[b].qs[4 * j + i]) ^ 0x80;
      }
    }
  }
}

void pack_q4_k(const void* data, int64_t rows, int64_t cols, PackedWeight& pw) {
  const int64_t nb = cols / 256;
  for (int64_t g = 0; g < pw.groups; ++g)
    for (int64_t r = 0; r < kRows && g * kRows + r < rows; ++r) {
      const auto* blk = static_cast<const BlockQ4_K*>(data) + (g * kRows + r) * nb;
      for (int64_t b = 0; b < nb; ++b) {
        std::byte* sb = pw.data.get() + g * pw.group_bytes + b * kQ4KSuper;
        auto* u8 = reinterpret_cast<uint8_t*>(sb);
        uint8_t q[256];
        for (int c = 0; c < 4; ++c)
          for (int l = 0; l < 32; ++l) {
            q[64 * c + l] = blk[b].qs[32 * c + l] & 0xf;
            q[64 * c + 32 + l] = blk[b].qs[32 * c + l] >> 4;
          }
        for (int s = 0; s < 8; ++s) {
          uint8_t sc, m;
          get_scale_min_k4(s, blk[b].scales, &sc, &m);
          u8[2048 + 16 * s + r] = static_cast<uint8_t>((sc & 0xf) | ((m & 0xf) << 4));
          uint32_t hi;
          std::memcpy(&hi, u8 + 2176 + 4 * r, 4);
          hi |= static_cast<uint32_t>(sc >> 4) << (2 * s) | static_cast<uint32_t>(m >> 4) << (16 + 2 * s);
          std::memcpy(u8 + 2176 + 4 * r, &hi, 4);
          for (int c = 0; c < 4; ++c)
            for (int i = 0; i < 4; ++i)
              u8[256 * s + 64 * c + 4 * r + i] =
                  static_cast<uint8_t>(q[32 * s + 4 * c + i] | (q[32 * s + 16 + 4 * c + i] << 4));
        }
        put_f16(sb + 2240 + 2 * r, blk[b].d);
        put_f16(sb + 2272 + 2 * r, blk[b].dmin);
      }
    }
}

void pack_q6_k(const void* data, int64_t rows, int64_t cols, PackedWeight& pw) {
  const int64_t nb = cols / 256;
  for (int64_t g = 0; g < pw.groups; ++g)
    for (int64_t r = 0; r < kRows && g * kRows + r < rows; ++r) {
      const auto* blk = static_cast<const BlockQ6_K*>(data) + (g * kRows + r) * nb;
      for (int64_t b = 0; b < nb; ++b) {
        std::byte* sb = pw.data.get() + g * pw.group_bytes + b * kQ6KSuper;
        auto* u8 = reinterpret_cast<uint8_t*>(sb);
        uint8_t q[256];  // unsigned 6-bit values (w = d * sc * (q - 32))
        for (int n = 0; n < 2; ++n) {
          const uint8_t* ql = blk[b].ql + 64 * n;
          const uint8_t* qh = blk[b].qh + 32 * n;
          for (int l = 0; l < 32; ++l) {
            q[128 * n + l] = static_cast<uint8_t>((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4));
            q[128 * n + l + 32] = static_cast<uint8_t>((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4));
            q[128 * n + l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
            q[128 * n + l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
          }
        }
        for (int u = 0; u < 8; ++u) {
          for (int c = 0; c < 4; ++c)
            for (int i = 0; i < 4; ++i)
              u8[320 + 384 * u + 64 * c + 4 * r + i] =
                  static_cast<uint8_t>((q[32 * u + 4 * c + i] & 0xf) | ((q[32 * u + 16 + 4 * c + i] & 0xf) << 4));
          for (int h = 0; h < 2; ++h)
            for (int i = 0; i < 4; ++i) {
              uint8_t bits = 0;
              for (int j = 0; j < 4; ++j) bits |= static_cast<uint8_t>((q[32 * u + 16 * h + 4 * j + i] >> 4) << (2 * j));
              u8[320 + 384 * u + 256 + 64 * h + 4 * r + i] = bits;
            }
        }
        for (int s = 0; s < 16; ++s) u8[16 * s + r] = static_cast<uint8_t>(blk[b].scales[s]);
        put_f16(sb + 256 + 2 * r, blk[b].d);
      }
    }
}

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

template <int T>
RAYO_AVX512 void q4_k_group(const std::byte* g, int64_t cols, const std::byte* const* xt, __m512* acc) {
  const int64_t nb = cols / 256;
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const __m512i low4 = _mm512_set1_epi32(0xf), low2 = _mm512_set1_epi32(3);
  for (int64_t b = 0; b < nb; ++b) {
    const std::byte* sb = g + b * kQ4KSuper;
    const __m512i top_bits = load512(sb + 2176);  // per row: bits 4-5 of every scale and min
    __m512i tot[T], mp[4];  // mp: the mins of sub-blocks 2p, 2p+1 as int16 pairs, for vpdpwssd
    for (int t = 0; t < T; ++t) tot[t] = _mm512_setzero_si512();
    for (int s = 0; s < 8; ++s) {
      prefetch_next_stride<kQ4KSuper, 8>(sb, s);
      __m512i lo[4], hi[4];
      for (int c = 0; c < 4; ++c) {
        const __m512i v = load512(sb + 256 * s + 64 * c);
        lo[c] = _mm512_and_si512(v, m4);
        hi[c] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
      }
      const __m512i nibbles = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sb + 2048 + 16 * s)));
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
          i = _mm512_dpbusd_epi32(i, lo[c], bcast4(xq + 4 * c));
          i = _mm512_dpbusd_epi32(i, hi[c], bcast4(xq + 16 + 4 * c));
        }
        tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(i, sc));
      }
    }
    const __m512 d = load_f16x16(sb + 2240), dmin = load_f16x16(sb + 2272);
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
    q4_k_group<T>(g, cols, xt, acc);
  }
};
template <int T>
struct Q6_KGroup {
  RAYO_AVX512 static void run(const std::byte* g, int64_t cols, const std::byte* const* xt, __m512* acc) {
    q6_k_group<T>(g, cols, xt, acc);
  }
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

bool packable(TensorType type) {
  return type == TensorType::Q8_0 || type == TensorType::Q4_K || type == TensorType::Q6_K;
}

std::shared_ptr<const PackedWeight> pack_weight(TensorType type, const void* data, int64_t rows, int64_t cols) {
  auto pw = std::make_shared<PackedWeight>();
  pw->type = type;
  pw->rows = rows;
  pw->cols = cols;
  pw->groups = (rows + kRows - 1) / kRows;
  pw->group_bytes = group_bytes(type, cols);
  const size_t total = static_cast<size_t>(pw->groups) * pw->group_bytes;
  pw->data = allocate_huge_pages(total, "a packed weight");
  std::memset(pw->data.get(), 0, total);  // padding rows: zero scales
  switch (type) {
    case TensorType::Q8_0: pack_q8_0(data, rows, cols, *pw); break;
    case TensorType::Q4_K: pack_q4_k(data, rows, cols, *pw); break;
    case TensorType::Q6_K: pack_q6_k(data, rows, cols, *pw); break;
    default: fail("no packed layout for ", type_name(type));
  }
  return pw;
}

TileKernel packed_kernel(Isa isa, TensorType type) {
#if defined(__x86_64__)
  if (isa == Isa::Avx512) {
    switch (type) {
      case TensorType::Q8_0: return &packed_tile<Q8_0Group>;
      case TensorType::Q4_K: return &packed_tile<Q4_KGroup>;
      case TensorType::Q6_K: return &packed_tile<Q6_KGroup>;
      default: break;
    }
  }
#endif
  return nullptr;
}

}  // namespace rayo::cpu::detail
