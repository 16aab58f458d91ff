// Bit-exactness with ggml needs every product and sum rounded on its own:
// a compiler allowed to contract d * q - m into one fused multiply-add (g++
// does so whenever FMA is enabled, even in ISO mode) would change the last bit.
#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "quant/dequantize.h"

#include <cstring>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "quant/k_scales.h"

namespace rayo::quant {

void dequantize_row_f32(const float* x, float* y, int64_t n) {
  std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
}

namespace {
// Every half's float value (256 KiB), built once from fp16_to_fp32: a load per
// value instead of the branchy bit manipulation, with identical results.
const float* half_to_float_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) t[h] = fp16_to_fp32(static_cast<uint16_t>(h));
    return t;
  }();
  return table.data();
}
}  // namespace

void dequantize_row_f16(const uint16_t* x, float* y, int64_t n) {
  const float* table = half_to_float_table();
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

void dequantize_row_bf16(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(x[i]);
}

// The 32-value formats first unpack a block's levels into a small local array,
// then convert in one loop of 32: the compiler vectorizes that (the output
// could alias the block's bytes as far as it knows, and loops of 16 get fully
// unrolled instead), three times faster than converting while unpacking.
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
  const int64_t nb = n / QK4_0;
  for (int64_t i = 0; i < nb; ++i, y += QK4_0) {
    const float d = fp16_to_fp32(x[i].d);
    int8_t q[32];
    for (int j = 0; j < 16; ++j) {
      q[j] = static_cast<int8_t>((x[i].qs[j] & 0x0F) - 8);
      q[j + 16] = static_cast<int8_t>((x[i].qs[j] >> 4) - 8);
    }
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j]) * d;
  }
}

void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n) {
  const int64_t nb = n / QK4_1;
  for (int64_t i = 0; i < nb; ++i, y += QK4_1) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    uint8_t q[32];
    for (int j = 0; j < 16; ++j) {
      q[j] = x[i].qs[j] & 0x0F;
      q[j + 16] = x[i].qs[j] >> 4;
    }
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j]) * d + m;
  }
}

namespace {
// Q5_0/Q5_1: bit j of the little-endian 32-bit qh is the fifth bit of value j
// (values 0..15 pair with the low nibbles, 16..31 with the high nibbles).
// Spread into 0/16 per value first so that the main loop is branch-free.
inline void fifth_bits(const uint8_t qh[4], uint8_t high[32]) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  for (int j = 0; j < 32; ++j) high[j] = static_cast<uint8_t>(((bits >> j) & 1) << 4);
}
}  // namespace

void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n) {
  const int64_t nb = n / QK5_0;
  uint8_t high[32];
  for (int64_t i = 0; i < nb; ++i, y += QK5_0) {
    const float d = fp16_to_fp32(x[i].d);
    fifth_bits(x[i].qh, high);
    int8_t q[32];
    for (int j = 0; j < 16; ++j) {
      q[j] = static_cast<int8_t>(((x[i].qs[j] & 0x0F) | high[j]) - 16);
      q[j + 16] = static_cast<int8_t>(((x[i].qs[j] >> 4) | high[j + 16]) - 16);
    }
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j]) * d;
  }
}

void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n) {
  const int64_t nb = n / QK5_1;
  uint8_t high[32];
  for (int64_t i = 0; i < nb; ++i, y += QK5_1) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    fifth_bits(x[i].qh, high);
    uint8_t q[32];
    for (int j = 0; j < 16; ++j) {
      q[j] = static_cast<uint8_t>((x[i].qs[j] & 0x0F) | high[j]);
      q[j + 16] = static_cast<uint8_t>((x[i].qs[j] >> 4) | high[j + 16]);
    }
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j]) * d + m;
  }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
  const int64_t nb = n / QK8_0;
  for (int64_t i = 0; i < nb; ++i, y += QK8_0) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < QK8_0; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

// ggml has no dequantize_row_q8_1 (Q8_1 only ever feeds dot products); the
// values are d * q as for Q8_0, the sum s is redundant.
void dequantize_row_q8_1(const BlockQ8_1* x, float* y, int64_t n) {
  const int64_t nb = n / QK8_1;
  for (int64_t i = 0; i < nb; ++i, y += QK8_1) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < QK8_1; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

// Q2_K: the 64 bytes of qs hold 2-bit values in two halves of 128; within a half,
// bits 2k..2k+1 of byte l hold value 32k + l. Sub-block s (16 values) uses
// scales[s] (low nibble scale, high nibble min).
namespace {
// Q2_K/Q3_K low bits: within each half of 128 values, value 32k + l sits in bits
// 2k..2k+1 of byte l (of that half's 32 bytes).
inline void unpack_2bit(const uint8_t* qs, uint8_t* levels) {
  for (int half = 0; half < 2; ++half)
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 32; ++l) levels[128 * half + 32 * k + l] = (qs[32 * half + l] >> (2 * k)) & 3;
}
}  // namespace

void dequantize_row_q2_K(const BlockQ2_K* x, float* y, int64_t n) {
  const int64_t nb = n / QK_K;
  uint8_t levels[QK_K];
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    unpack_2bit(x[i].qs, levels);
    for (int sub = 0; sub < QK_K / 16; ++sub, y += 16) {
      const uint8_t sc = x[i].scales[sub];
      const float dl = d * static_cast<float>(sc & 0xF);
      const float ml = dmin * static_cast<float>(sc >> 4);
      for (int l = 0; l < 16; ++l) {
        const float v = dl * static_cast<float>(levels[16 * sub + l]);
        y[l] = v - ml;
      }
    }
  }
}

// Q3_K: as Q2_K for the low 2 bits; the third bit of value 32k + l (within a
// half of 128) is bit k (+4 for the second half) of hmask[l]; clear means -4.
void dequantize_row_q3_K(const BlockQ3_K* x, float* y, int64_t n) {
  const int64_t nb = n / QK_K;
  int8_t scales[16];
  int8_t levels[QK_K];
  for (int64_t i = 0; i < nb; ++i) {
    const float d_all = fp16_to_fp32(x[i].d);
    unpack_q3_k_scales(x[i].scales, scales);
    uint8_t low[QK_K];
    unpack_2bit(x[i].qs, low);
    for (int k = 0; k < 8; ++k)  // value 32k + l: third bit is bit k of hmask[l]
      for (int l = 0; l < 32; ++l)
        levels[32 * k + l] = static_cast<int8_t>(low[32 * k + l] - (((x[i].hmask[l] >> k) & 1) ? 0 : 4));
    for (int sub = 0; sub < QK_K / 16; ++sub, y += 16) {
      const float dl = d_all * static_cast<float>(scales[sub]);
      for (int l = 0; l < 16; ++l) y[l] = dl * static_cast<float>(levels[16 * sub + l]);
    }
  }
}

// Q4_K: 64 values per 32 bytes of qs (low nibbles, then high nibbles), each
// group of 32 with its own 6-bit scale and min.
void dequantize_row_q4_K(const BlockQ4_K* x, float* y, int64_t n) {
  const int64_t nb = n / QK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* q = x[i].qs;
    for (int sub = 0; sub < 8; sub += 2, q += 32) {
      uint8_t sc, m;
      get_scale_min_k4(sub, x[i].scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      get_scale_min_k4(sub + 1, x[i].scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        const float v = d1 * static_cast<float>(q[l] & 0xF);
        *y++ = v - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const float v = d2 * static_cast<float>(q[l] >> 4);
        *y++ = v - m2;
      }
    }
  }
}

// Q5_K: Q4_K plus a fifth bit: for the k-th group of 64 values, bit 2k of qh[l]
// belongs to the low-nibble value l and bit 2k+1 to the high-nibble value.
void dequantize_row_q5_K(const BlockQ5_K* x, float* y, int64_t n) {
  const int64_t nb = n / QK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* ql = x[i].qs;
    const uint8_t* qh = x[i].qh;
    uint8_t u1 = 1, u2 = 2;
    for (int sub = 0; sub < 8; sub += 2, ql += 32) {
      uint8_t sc, m;
      get_scale_min_k4(sub, x[i].scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      get_scale_min_k4(sub + 1, x[i].scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        const int q = (ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0);
        const float v = d1 * static_cast<float>(q);
        *y++ = v - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const int q = (ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0);
        const float v = d2 * static_cast<float>(q);
        *y++ = v - m2;
      }
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  }
}

// Q6_K: per half of 128 values, ql[0..63] and qh[0..31]: value l (l < 32) and
// l + 64 take the low/high nibble of ql[l], values l + 32 and l + 96 those of
// ql[l + 32]; their top 2 bits are bit pairs 0, 2, 4, 6 of qh[l].
// ggml computes d * scale * q as (d * scale) * q: kept for bit-exactness.
void dequantize_row_q6_K(const BlockQ6_K* x, float* y, int64_t n) {
  const int64_t nb = n / QK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x[i].ql + 64 * half;
      const uint8_t* qh = x[i].qh + 32 * half;
      for (int quarter = 0; quarter < 4; ++quarter) {  // values 32 * quarter .. + 31 of this half
        const uint8_t* qlp = ql + 32 * (quarter % 2);
        const int low_shift = 4 * (quarter / 2), high_shift = 2 * quarter;
        for (int part = 0; part < 2; ++part, y += 16) {  // 16 values share a scale
          const float ds = d * static_cast<float>(x[i].scales[8 * half + 2 * quarter + part]);
          for (int l = 16 * part; l < 16 * part + 16; ++l) {
            const int q = (((qlp[l] >> low_shift) & 0xF) | (((qh[l] >> high_shift) & 3) << 4)) - 32;
            y[l - 16 * part] = ds * static_cast<float>(q);
          }
        }
      }
    }
  }
}

void dequantize_row_q8_K(const BlockQ8_K* x, float* y, int64_t n) {
  const int64_t nb = n / QK_K;
  for (int64_t i = 0; i < nb; ++i)
    for (int j = 0; j < QK_K; ++j) *y++ = x[i].d * static_cast<float>(x[i].qs[j]);
}

void dequantize_row_iq4_nl(const BlockIQ4_NL* x, float* y, int64_t n) {
  const int64_t nb = n / QK4_NL;
  for (int64_t i = 0; i < nb; ++i, y += QK4_NL) {
    const float d = fp16_to_fp32(x[i].d);
    int8_t q[32];
    for (int j = 0; j < 16; ++j) {
      q[j] = kIq4nlValues[x[i].qs[j] & 0xF];
      q[j + 16] = kIq4nlValues[x[i].qs[j] >> 4];
    }
    for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(q[j]);
  }
}

void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, int64_t n) {
  const int64_t nb = n / QK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const uint8_t* qs = x[i].qs;
    for (int sub = 0; sub < QK_K / 32; ++sub, y += 32, qs += 16) {
      const int ls = ((x[i].scales_l[sub / 2] >> (4 * (sub % 2))) & 0xF) | (((x[i].scales_h >> (2 * sub)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIq4nlValues[qs[j] & 0xF]);
        y[j + 16] = dl * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
      }
    }
  }
}

float e8m0_to_float_half(uint8_t e) {
  // 2^(e - 128): exponent field e - 1 for e >= 2; below that the subnormals
  // 2^-128 (0x00200000) and 2^-127 (0x00400000).
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

void dequantize_row_mxfp4(const BlockMXFP4* x, float* y, int64_t n) {
  const int64_t nb = n / QK_MXFP4;
  for (int64_t i = 0; i < nb; ++i, y += QK_MXFP4) {
    const float d = e8m0_to_float_half(x[i].e);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(kMxfp4Values[x[i].qs[j] & 0xF]) * d;
      y[j + 16] = static_cast<float>(kMxfp4Values[x[i].qs[j] >> 4]) * d;
    }
  }
}

namespace {

template <typename Block>
const Block* blocks(const void* src, TensorType type) {
  // GGUF tensor data is aligned to at least 32 bytes; a misaligned pointer here
  // is a caller bug that would otherwise be undefined behaviour.
  RAYO_CHECK(reinterpret_cast<uintptr_t>(src) % alignof(Block) == 0, "misaligned ", type_name(type),
             " data");
  return static_cast<const Block*>(src);
}

}  // namespace

bool can_dequantize(TensorType type) {
  const auto t = tensor_type_info(static_cast<uint32_t>(type));
  return t && t->decodes;
}

void dequantize_row(TensorType type, const void* src, float* dst, int64_t n) {
  const auto type_info = tensor_type_info(static_cast<uint32_t>(type));
  if (!type_info) fail("cannot dequantize tensor type id ", static_cast<uint32_t>(type));
  if (!can_dequantize(type)) fail("cannot dequantize tensor type ", type_info->name, ": not supported");
  if (n < 0 || n % type_info->block_size != 0)
    fail("cannot dequantize ", n, " values of type ", type_info->name, ": not a multiple of its block size ",
         type_info->block_size);
  switch (type) {
    case TensorType::F32: return dequantize_row_f32(blocks<float>(src, type), dst, n);
    case TensorType::F16: return dequantize_row_f16(blocks<uint16_t>(src, type), dst, n);
    case TensorType::BF16: return dequantize_row_bf16(blocks<uint16_t>(src, type), dst, n);
    case TensorType::Q4_0: return dequantize_row_q4_0(blocks<BlockQ4_0>(src, type), dst, n);
    case TensorType::Q4_1: return dequantize_row_q4_1(blocks<BlockQ4_1>(src, type), dst, n);
    case TensorType::Q5_0: return dequantize_row_q5_0(blocks<BlockQ5_0>(src, type), dst, n);
    case TensorType::Q5_1: return dequantize_row_q5_1(blocks<BlockQ5_1>(src, type), dst, n);
    case TensorType::Q8_0: return dequantize_row_q8_0(blocks<BlockQ8_0>(src, type), dst, n);
    case TensorType::Q8_1: return dequantize_row_q8_1(blocks<BlockQ8_1>(src, type), dst, n);
    case TensorType::Q2_K: return dequantize_row_q2_K(blocks<BlockQ2_K>(src, type), dst, n);
    case TensorType::Q3_K: return dequantize_row_q3_K(blocks<BlockQ3_K>(src, type), dst, n);
    case TensorType::Q4_K: return dequantize_row_q4_K(blocks<BlockQ4_K>(src, type), dst, n);
    case TensorType::Q5_K: return dequantize_row_q5_K(blocks<BlockQ5_K>(src, type), dst, n);
    case TensorType::Q6_K: return dequantize_row_q6_K(blocks<BlockQ6_K>(src, type), dst, n);
    case TensorType::Q8_K: return dequantize_row_q8_K(blocks<BlockQ8_K>(src, type), dst, n);
    case TensorType::IQ4_NL: return dequantize_row_iq4_nl(blocks<BlockIQ4_NL>(src, type), dst, n);
    case TensorType::IQ4_XS: return dequantize_row_iq4_xs(blocks<BlockIQ4_XS>(src, type), dst, n);
    case TensorType::MXFP4: return dequantize_row_mxfp4(blocks<BlockMXFP4>(src, type), dst, n);
    default: break;
  }
  fail("cannot dequantize tensor type ", type_info->name, ": not supported");
}

}  // namespace rayo::quant
