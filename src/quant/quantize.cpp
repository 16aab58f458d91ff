// Byte-identical output with ggml needs its float operations in its order,
// each rounded on its own (no fused multiply-add). Ignoring floating-point
// exception flags (which nothing reads) changes no result and lets g++
// if-convert, hence vectorize, the activation quantizers' rounding loops.
#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off", "no-trapping-math")
#endif

#include "quant/quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/error.h"
#include "common/half.h"
#include "quant/k_scales.h"
#include "quant/scale_search.h"

namespace rayo::quant {
namespace {

// C's float -> integer conversion truncates toward zero and is undefined out
// of range; ggml relies on the range never being exceeded for finite input.
// This truncates the same way, and maps NaN to 0 and out-of-range values to the
// nearest bound, so hostile input cannot reach undefined behaviour.
inline int trunc_to_int(float v, int lo, int hi) {
  if (!(v == v)) return 0;
  if (v <= static_cast<float>(lo)) return lo;
  if (v >= static_cast<float>(hi)) return hi;
  return static_cast<int>(v);
}

// roundf (half away from zero) of a value clamped to [-127, 127], NaN -> 0.
// Written with a truncation and an exact remainder (x - trunc(x) is exact below
// 2^23) instead of a libm call so that the activation quantizers vectorize;
// the result is the same as roundf's.
inline int8_t round_to_int8(float v) {
  float c = v > 127.0f ? 127.0f : v;
  c = c < -127.0f ? -127.0f : c;
  c = c == c ? c : 0.0f;
  const int t = static_cast<int>(c);
  const float rest = c - static_cast<float>(t);
  const int up = rest >= 0.5f ? 1 : 0;
  const int down = rest <= -0.5f ? 1 : 0;
  return static_cast<int8_t>(t + up - down);
}

// nearest_int for values that may be out of its range or NaN (only when the
// input is not finite): clamps to ±limit first, NaN -> 0.
inline int nearest_int_clamped(float v, float limit) {
  if (!(v == v)) return 0;
  return nearest_int(std::clamp(v, -limit, limit));
}

// Largest finite half. A scale whose half would round to infinity is stored as
// this instead (see quantize.h).
constexpr float kMaxHalf = 65504.0f;

// Packs 2-bit levels (Q2_K, and the low bits of Q3_K): within each half of 128
// values, value 32k + l goes to bits 2k..2k+1 of byte l.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < QK_K; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                            (L[j + l + 96] << 6));
}

// Q4_K/Q5_K: low nibbles of 32 bytes hold values 64k..64k+31, high nibbles
// values 64k+32..64k+63 (the fifth bit of Q5_K goes to qh separately).
void pack_nibbles_k(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < QK_K; j += 64, qs += 32)
    for (int l = 0; l < 32; ++l) qs[l] = static_cast<uint8_t>((L[j + l] & 0xF) | ((L[j + l + 32] & 0xF) << 4));
}

// Q4_0 / Q5_0: the value of largest magnitude (first one on ties) with its sign.
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void min_max(const float* x, int n, float* min, float* max) {
  *min = FLT_MAX;
  *max = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    if (x[j] < *min) *min = x[j];
    if (x[j] > *max) *max = x[j];
  }
}

// Q4_K/Q5_K: quantizes the 8 sub-block scales and mins to 6 bits against the
// largest of each, fills scales/d/dmin, then recomputes the levels L (0..nmax)
// from the stored (rounded) scales, as ggml does.
template <typename Block>
void finish_k4_block(const float* x, const float* scales, const float* mins, int nmax, uint8_t* L, Block& y) {
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < QK_K / 32; ++j) {
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  std::memset(y.scales, 0, sizeof y.scales);
  for (int j = 0; j < QK_K / 32; ++j) {
    // ggml stores nearest_int into a uint8_t before clamping: keep the wrap.
    const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    set_scale_min_k4(j, ls, lm, y.scales);
  }
  y.d = fp32_to_fp16(max_scale / 63.f);
  y.dmin = fp32_to_fp16(max_min / 63.f);
  for (int j = 0; j < QK_K / 32; ++j) {
    uint8_t sc, m;
    get_scale_min_k4(j, y.scales, &sc, &m);
    const float d = fp16_to_fp32(y.d) * static_cast<float>(sc);
    if (!d) continue;
    const float dm = fp16_to_fp32(y.dmin) * static_cast<float>(m);
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = static_cast<uint8_t>(std::clamp(l, 0, nmax));
    }
  }
}

// Q4_K/Q5_K sub-block fit: weights favour large values (av_x + |x|).
void fit_k4_sub_blocks(const float* x, int nmax, float rmin, float rdelta, int nstep, uint8_t* L, float* scales,
                       float* mins) {
  float weights[32];
  uint8_t Laux[32];
  for (int j = 0; j < QK_K / 32; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = make_qkx2_quants(32, nmax, xs, weights, L + 32 * j, &mins[j], Laux, rmin, rdelta, nstep, false);
  }
}

}  // namespace

void quantize_row_f16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void quantize_row_bf16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
}

// value = d * (q - 8): the largest magnitude maps to q = 0 (-8 * d), so d takes
// its sign and the full negative range is used.
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
  const int64_t nb = n / QK4_0;
  for (int64_t i = 0; i < nb; ++i, x += QK4_0) {
    const float d = signed_absmax(x, QK4_0) / -8;
    const float id = d ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < QK4_0 / 2; ++j) {
      const int q0 = std::min(15, trunc_to_int(x[j] * id + 8.5f, -128, 127));
      const int q1 = std::min(15, trunc_to_int(x[j + QK4_0 / 2] * id + 8.5f, -128, 127));
      y[i].qs[j] = static_cast<uint8_t>(static_cast<uint8_t>(q0) | (static_cast<uint8_t>(q1) << 4));
    }
  }
}

void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t n) {
  const int64_t nb = n / QK4_1;
  for (int64_t i = 0; i < nb; ++i, x += QK4_1) {
    float min, max;
    min_max(x, QK4_1, &min, &max);
    const float d = (max - min) / 15;
    const float id = d ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    for (int j = 0; j < QK4_1 / 2; ++j) {
      const int q0 = std::min(15, trunc_to_int((x[j] - min) * id + 0.5f, -128, 127));
      const int q1 = std::min(15, trunc_to_int((x[j + QK4_1 / 2] - min) * id + 0.5f, -128, 127));
      y[i].qs[j] = static_cast<uint8_t>(static_cast<uint8_t>(q0) | (static_cast<uint8_t>(q1) << 4));
    }
  }
}

void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t n) {
  const int64_t nb = n / QK5_0;
  for (int64_t i = 0; i < nb; ++i, x += QK5_0) {
    const float d = signed_absmax(x, QK5_0) / -16;
    const float id = d ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < QK5_0 / 2; ++j) {
      const auto q0 = static_cast<uint8_t>(std::min(31, trunc_to_int(x[j] * id + 16.5f, -128, 127)));
      const auto q1 = static_cast<uint8_t>(std::min(31, trunc_to_int(x[j + QK5_0 / 2] * id + 16.5f, -128, 127)));
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + QK5_0 / 2);
    }
    std::memcpy(y[i].qh, &qh, sizeof qh);
  }
}

void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t n) {
  const int64_t nb = n / QK5_1;
  for (int64_t i = 0; i < nb; ++i, x += QK5_1) {
    float min, max;
    min_max(x, QK5_1, &min, &max);
    const float d = (max - min) / 31;
    const float id = d ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    uint32_t qh = 0;
    for (int j = 0; j < QK5_1 / 2; ++j) {
      // ggml converts straight to uint8_t here (no clamp at 31); the value never
      // exceeds 31.5 for finite input.
      const auto q0 = static_cast<uint8_t>(trunc_to_int((x[j] - min) * id + 0.5f, 0, 255));
      const auto q1 = static_cast<uint8_t>(trunc_to_int((x[j + QK5_1 / 2] - min) * id + 0.5f, 0, 255));
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + QK5_1 / 2);
    }
    std::memcpy(y[i].qh, &qh, sizeof qh);
  }
}

namespace {

// Shared by Q8_0 and Q8_1: scale from the largest magnitude, quants rounded half
// away from zero. Returns the float scale actually used for the quants.
float quantize_block_8bit(const float* x, int8_t* qs, uint16_t* d_half) {
  float amax = 0.0f;
#if defined(__SSE2__)
  // Four lanes at a time (weights quantized at load spend most of their time
  // here otherwise): the maximum is the same in any order, and MAXPS returns
  // its second operand where the first is NaN, so NaN is skipped as below.
  const __m128 magnitude = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
  __m128 m = _mm_setzero_ps();
  for (int j = 0; j < QK8_0; j += 4) m = _mm_max_ps(_mm_and_ps(_mm_loadu_ps(x + j), magnitude), m);
  float lanes[4];
  _mm_storeu_ps(lanes, m);
  for (const float a : lanes) amax = std::max(amax, a);
#else
  for (int j = 0; j < QK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));  // NaN skipped
#endif
  float d = amax / 127;
  if (fp32_to_fp16(d) == 0x7c00) d = kMaxHalf;  // its half would be infinite
  const float id = d ? 1.0f / d : 0.0f;
  *d_half = fp32_to_fp16(d);
  for (int j = 0; j < QK8_0; ++j) qs[j] = round_to_int8(x[j] * id);
  return d;
}

}  // namespace

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  const int64_t nb = n / QK8_0;
  for (int64_t i = 0; i < nb; ++i, x += QK8_0) quantize_block_8bit(x, y[i].qs, &y[i].d);
}

void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
  const int64_t nb = n / QK8_1;
  for (int64_t i = 0; i < nb; ++i, x += QK8_1) {
    const float d = quantize_block_8bit(x, y[i].qs, &y[i].d);
    int sum = 0;
    for (int j = 0; j < QK8_1; ++j) sum += y[i].qs[j];
    y[i].s = fp32_to_fp16(static_cast<float>(sum) * d);
  }
}

// Q2_K: per sub-block of 16 an asymmetric 2-bit fit (weights |x|, absolute
// error), then the 16 scales and mins quantized to 4 bits against their maxima.
void quantize_row_q2_K(const float* x, BlockQ2_K* y, int64_t n) {
  const int64_t nb = n / QK_K;
  uint8_t L[QK_K], Laux[16];
  float weights[16], mins[QK_K / 16], scales[QK_K / 16];
  const float q4scale = 15.f;
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
      const float iscale = q4scale / max_scale;
      for (int j = 0; j < QK_K / 16; ++j) y[i].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      y[i].d = fp32_to_fp16(max_scale / q4scale);
    } else {
      std::memset(y[i].scales, 0, sizeof y[i].scales);
      y[i].d = fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
      const float iscale = q4scale / max_min;
      for (int j = 0; j < QK_K / 16; ++j)
        y[i].scales[j] = static_cast<uint8_t>(y[i].scales[j] | (nearest_int(iscale * mins[j]) << 4));
      y[i].dmin = fp32_to_fp16(max_min / q4scale);
    } else {
      y[i].dmin = fp32_to_fp16(0.f);
    }
    for (int j = 0; j < QK_K / 16; ++j) {
      const float d = fp16_to_fp32(y[i].d) * static_cast<float>(y[i].scales[j] & 0xF);
      if (!d) continue;
      const float dm = fp16_to_fp32(y[i].dmin) * static_cast<float>(y[i].scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int((x[16 * j + ii] + dm) / d);
        L[16 * j + ii] = static_cast<uint8_t>(std::clamp(l, 0, 3));
      }
    }
    pack_2bit(L, y[i].qs);
  }
}

// Q3_K: per sub-block of 16 a symmetric 3-bit fit, then the 16 signed scales
// quantized to 6 bits against the one of largest magnitude.
void quantize_row_q3_K(const float* x, BlockQ3_K* y, int64_t n) {
  const int64_t nb = n / QK_K;
  int8_t L[QK_K];
  float scales[QK_K / 16];
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    float max_scale = 0, amax = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
      scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
      const float scale = std::fabs(scales[j]);
      if (scale > amax) {
        amax = scale;
        max_scale = scales[j];
      }
    }
    uint8_t biased[QK_K / 16] = {};
    if (max_scale) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < QK_K / 16; ++j) {
        const auto l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
        biased[j] = static_cast<uint8_t>(std::clamp<int>(l, -32, 31) + 32);
      }
      y[i].d = fp32_to_fp16(1 / iscale);
    } else {
      y[i].d = fp32_to_fp16(0.f);
    }
    // With max_scale == 0 ggml leaves all packed scales 0 (biased 0, i.e. -32);
    // d is 0 then, so nothing below depends on them.
    pack_q3_k_scales(biased, y[i].scales);
    int8_t sc[QK_K / 16];
    unpack_q3_k_scales(y[i].scales, sc);
    for (int j = 0; j < QK_K / 16; ++j) {
      const float d = fp16_to_fp32(y[i].d) * static_cast<float>(sc[j]);
      if (!d) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int(x[16 * j + ii] / d);
        L[16 * j + ii] = static_cast<int8_t>(std::clamp(l, -4, 3) + 4);
      }
    }
    // The third bit of value j goes to bit j / 32 of hmask[j % 32].
    std::memset(y[i].hmask, 0, sizeof y[i].hmask);
    uint8_t low[QK_K];
    for (int j = 0; j < QK_K; ++j) {
      int l = L[j];
      if (l > 3) {
        y[i].hmask[j % 32] = static_cast<uint8_t>(y[i].hmask[j % 32] | (1 << (j / 32)));
        l -= 4;
      }
      low[j] = static_cast<uint8_t>(l);
    }
    pack_2bit(low, y[i].qs);
  }
}

void quantize_row_q4_K(const float* x, BlockQ4_K* y, int64_t n) {
  const int64_t nb = n / QK_K;
  uint8_t L[QK_K];
  float mins[QK_K / 32], scales[QK_K / 32];
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    fit_k4_sub_blocks(x, 15, -1.f, 0.1f, 20, L, scales, mins);
    finish_k4_block(x, scales, mins, 15, L, y[i]);
    pack_nibbles_k(L, y[i].qs);
  }
}

void quantize_row_q5_K(const float* x, BlockQ5_K* y, int64_t n) {
  const int64_t nb = n / QK_K;
  uint8_t L[QK_K];
  float mins[QK_K / 32], scales[QK_K / 32];
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    fit_k4_sub_blocks(x, 31, -0.5f, 0.1f, 15, L, scales, mins);
    finish_k4_block(x, scales, mins, 31, L, y[i]);
    pack_nibbles_k(L, y[i].qs);
    // Fifth bits: group k of 64 values puts value l's in bit 2k of qh[l] and
    // value l + 32's in bit 2k + 1.
    std::memset(y[i].qh, 0, sizeof y[i].qh);
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l) {
        if (L[64 * g + l] > 15) y[i].qh[l] = static_cast<uint8_t>(y[i].qh[l] | (1 << (2 * g)));
        if (L[64 * g + l + 32] > 15) y[i].qh[l] = static_cast<uint8_t>(y[i].qh[l] | (2 << (2 * g)));
      }
  }
}

// Q6_K: per sub-block of 16 a symmetric 6-bit fit, then the 16 scales to signed
// 8 bits against the one of largest magnitude (which becomes -128).
void quantize_row_q6_K(const float* x, BlockQ6_K* y, int64_t n) {
  const int64_t nb = n / QK_K;
  int8_t L[QK_K];
  float scales[QK_K / 16];
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < QK_K / 16; ++ib) {
      scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, nullptr);
      const float abs_scale = std::fabs(scales[ib]);
      if (abs_scale > max_abs_scale) {
        max_abs_scale = abs_scale;
        max_scale = scales[ib];
      }
    }
    if (max_abs_scale < 1e-15f) {  // ggml's GROUP_MAX_EPS: an all-zero block
      std::memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    const float iscale = -128.f / max_scale;
    y[i].d = fp32_to_fp16(1 / iscale);
    for (int ib = 0; ib < QK_K / 16; ++ib)
      y[i].scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    for (int j = 0; j < QK_K / 16; ++j) {
      const float d = fp16_to_fp32(y[i].d) * static_cast<float>(y[i].scales[j]);
      if (!d) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int(x[16 * j + ii] / d);
        L[16 * j + ii] = static_cast<int8_t>(std::clamp(l, -32, 31) + 32);
      }
    }
    // Per half of 128: ql[l] holds values l (low nibble) and l+64 (high),
    // ql[l+32] values l+32 and l+96; qh[l] their top 2 bits in pairs 0,2,4,6.
    uint8_t* ql = y[i].ql;
    uint8_t* qh = y[i].qh;
    for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const auto v0 = static_cast<uint8_t>(L[j + l]), v1 = static_cast<uint8_t>(L[j + l + 32]);
        const auto v2 = static_cast<uint8_t>(L[j + l + 64]), v3 = static_cast<uint8_t>(L[j + l + 96]);
        ql[l] = static_cast<uint8_t>((v0 & 0xF) | ((v2 & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((v1 & 0xF) | ((v3 & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((v0 >> 4) | ((v1 >> 4) << 2) | ((v2 >> 4) << 4) | ((v3 >> 4) << 6));
      }
    }
  }
}

// Q8_K: float scale so that the value of largest magnitude maps to -127 (not
// -128: ggml keeps the range symmetric for its IQ dot products).
void quantize_row_q8_K(const float* x, BlockQ8_K* y, int64_t n) {
  const int64_t nb = n / QK_K;
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    float max = 0, amax = 0;
    for (int j = 0; j < QK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (!amax) {
      y[i].d = 0;
      std::memset(y[i].qs, 0, sizeof y[i].qs);
      std::memset(y[i].bsums, 0, sizeof y[i].bsums);
      continue;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < QK_K; ++j)
      y[i].qs[j] = static_cast<int8_t>(std::min(127, nearest_int_clamped(iscale * x[j], 127.f)));
    for (int j = 0; j < QK_K / 16; ++j) {
      int sum = 0;
      for (int ii = 0; ii < 16; ++ii) sum += y[i].qs[j * 16 + ii];
      y[i].bsums[j] = static_cast<int16_t>(sum);
    }
    y[i].d = 1 / iscale;
  }
}

namespace {

template <typename Block>
Block* out_blocks(void* dst, TensorType type) {
  RAYO_CHECK(reinterpret_cast<uintptr_t>(dst) % alignof(Block) == 0, "misaligned ", type_name(type),
             " destination");
  return static_cast<Block*>(dst);
}

}  // namespace

bool can_quantize(TensorType type) {
  const auto t = tensor_type_info(static_cast<uint32_t>(type));
  return t && t->encodes;
}

void quantize_row(TensorType type, const float* src, void* dst, int64_t n) {
  const auto type_info = tensor_type_info(static_cast<uint32_t>(type));
  if (!type_info) fail("cannot quantize to tensor type id ", static_cast<uint32_t>(type));
  if (!can_quantize(type)) fail("cannot quantize to tensor type ", type_info->name, ": not supported");
  if (n < 0 || n % type_info->block_size != 0)
    fail("cannot quantize ", n, " values to ", type_info->name, ": not a multiple of its block size ",
         type_info->block_size);
  switch (type) {
    case TensorType::F32:
      std::memcpy(out_blocks<float>(dst, type), src, static_cast<size_t>(n) * sizeof(float));
      return;
    case TensorType::F16: return quantize_row_f16(src, out_blocks<uint16_t>(dst, type), n);
    case TensorType::BF16: return quantize_row_bf16(src, out_blocks<uint16_t>(dst, type), n);
    case TensorType::Q4_0: return quantize_row_q4_0(src, out_blocks<BlockQ4_0>(dst, type), n);
    case TensorType::Q4_1: return quantize_row_q4_1(src, out_blocks<BlockQ4_1>(dst, type), n);
    case TensorType::Q5_0: return quantize_row_q5_0(src, out_blocks<BlockQ5_0>(dst, type), n);
    case TensorType::Q5_1: return quantize_row_q5_1(src, out_blocks<BlockQ5_1>(dst, type), n);
    case TensorType::Q8_0: return quantize_row_q8_0(src, out_blocks<BlockQ8_0>(dst, type), n);
    case TensorType::Q8_1: return quantize_row_q8_1(src, out_blocks<BlockQ8_1>(dst, type), n);
    case TensorType::Q2_K: return quantize_row_q2_K(src, out_blocks<BlockQ2_K>(dst, type), n);
    case TensorType::Q3_K: return quantize_row_q3_K(src, out_blocks<BlockQ3_K>(dst, type), n);
    case TensorType::Q4_K: return quantize_row_q4_K(src, out_blocks<BlockQ4_K>(dst, type), n);
    case TensorType::Q5_K: return quantize_row_q5_K(src, out_blocks<BlockQ5_K>(dst, type), n);
    case TensorType::Q6_K: return quantize_row_q6_K(src, out_blocks<BlockQ6_K>(dst, type), n);
    case TensorType::Q8_K: return quantize_row_q8_K(src, out_blocks<BlockQ8_K>(dst, type), n);
    default: break;
  }
  fail("cannot quantize to tensor type ", type_info->name, ": not supported");
}

}  // namespace rayo::quant
