// Bit-exactness with ggml needs every product and sum rounded on its own:
// a compiler allowed to contract d * q - m into one fused multiply-add (g++
// does so whenever FMA is enabled, even in ISO mode) would change the last bit.
#pragma GCC optimize("fp-contract=off")

#include "quant/dequantize.h"

#include <cstring>

#include "common/error.h"
#include "common/half.h"
#include "quant/k_scales.h"

namespace rayo::quant {

void dequantize_row_f32(const float* x, float* y, int64_t n) {
  std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
}

void dequantize_row_f16(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

void dequantize_row_bf16(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(x[i]);
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
  const int64_t nb = n / QK4_0;
  for (int64_t i = 0; i < nb; ++i, y += QK4_0) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < QK4_0 / 2; ++j) {
      const int q0 = (x[i].qs[j] & 0x0F) - 8;
      const int q1 = (x[i].qs[j] >> 4) - 8;
      y[j] = static_cast<float>(q0) * d;
      y[j + QK4_0 / 2] = static_cast<float>(q1) * d;
    }
  }
}

void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n) {
  const int64_t nb = n / QK4_1;
  for (int64_t i = 0; i < nb; ++i, y += QK4_1) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    for (int j = 0; j < QK4_1 / 2; ++j) {
      const int q0 = x[i].qs[j] & 0x0F;
      const int q1 = x[i].qs[j] >> 4;
      y[j] = static_cast<float>(q0) * d + m;
      y[j + QK4_1 / 2] = static_cast<float>(q1) * d + m;
    }
  }
}

namespace {
// Q5_0/Q5_1: bit j of the 32-bit qh is the fifth bit of value j (low half from
// the low nibbles, values 16..31 from the high nibbles).
inline uint32_t load_qh(const uint8_t qh[4]) {
  uint32_t v;
  std::memcpy(&v, qh, 4);
  return v;
}
}  // namespace

void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n) {
  const int64_t nb = n / QK5_0;
  for (int64_t i = 0; i < nb; ++i, y += QK5_0) {
    const float d = fp16_to_fp32(x[i].d);
    const uint32_t qh = load_qh(x[i].qh);
    for (int j = 0; j < QK5_0 / 2; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1) << 4;
      const int h1 = static_cast<int>((qh >> (j + 16)) & 1) << 4;
      const int q0 = ((x[i].qs[j] & 0x0F) | h0) - 16;
      const int q1 = ((x[i].qs[j] >> 4) | h1) - 16;
      y[j] = static_cast<float>(q0) * d;
      y[j + QK5_0 / 2] = static_cast<float>(q1) * d;
    }
  }
}

void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n) {
  const int64_t nb = n / QK5_1;
  for (int64_t i = 0; i < nb; ++i, y += QK5_1) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    const uint32_t qh = load_qh(x[i].qh);
    for (int j = 0; j < QK5_1 / 2; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1) << 4;
      const int h1 = static_cast<int>((qh >> (j + 16)) & 1) << 4;
      const int q0 = (x[i].qs[j] & 0x0F) | h0;
      const int q1 = (x[i].qs[j] >> 4) | h1;
      y[j] = static_cast<float>(q0) * d + m;
      y[j + QK5_1 / 2] = static_cast<float>(q1) * d + m;
    }
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
void dequantize_row_q2_K(const BlockQ2_K* x, float* y, int64_t n) {
  const int64_t nb = n / QK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* q = x[i].qs;
    int sub = 0;
    for (int half = 0; half < QK_K; half += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {  // bytes 0..15, then 16..31
          const uint8_t sc = x[i].scales[sub++];
          const float dl = d * static_cast<float>(sc & 0xF);
          const float ml = dmin * static_cast<float>(sc >> 4);
          const uint8_t* qp = q + 16 * part;
          for (int l = 0; l < 16; ++l) {
            const float v = dl * static_cast<float>((qp[l] >> shift) & 3);
            *y++ = v - ml;
          }
        }
      }
    }
  }
}

// Q3_K: as Q2_K for the low 2 bits; the third bit of value 32k + l (within a
// half of 128) is bit k (+4 for the second half) of hmask[l]; clear means -4.
void dequantize_row_q3_K(const BlockQ3_K* x, float* y, int64_t n) {
  const int64_t nb = n / QK_K;
  int8_t scales[16];
  for (int64_t i = 0; i < nb; ++i) {
    const float d_all = fp16_to_fp32(x[i].d);
    unpack_q3_k_scales(x[i].scales, scales);
    const uint8_t* q = x[i].qs;
    const uint8_t* hm = x[i].hmask;
    uint8_t mask = 1;
    int sub = 0;
    for (int half = 0; half < QK_K; half += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, mask = static_cast<uint8_t>(mask << 1)) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d_all * static_cast<float>(scales[sub++]);
          const uint8_t* qp = q + 16 * part;
          const uint8_t* hp = hm + 16 * part;
          for (int l = 0; l < 16; ++l) {
            const int v = ((qp[l] >> shift) & 3) - ((hp[l] & mask) ? 0 : 4);
            *y++ = dl * static_cast<float>(v);
          }
        }
      }
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
// ggml multiplies (d * scale) first, then by q: kept for bit-exactness.
void dequantize_row_q6_K(const BlockQ6_K* x, float* y, int64_t n) {
  const int64_t nb = n / QK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int half = 0; half < QK_K; half += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void dequantize_row_q8_K(const BlockQ8_K* x, float* y, int64_t n) {
  const int64_t nb = n / QK_K;
  for (int64_t i = 0; i < nb; ++i)
    for (int j = 0; j < QK_K; ++j) *y++ = x[i].d * static_cast<float>(x[i].qs[j]);
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
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::Q8_1:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
    case TensorType::Q8_K:
      return true;
    default:
      return false;
  }
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
    default: break;
  }
  fail("cannot dequantize tensor type ", type_info->name, ": not supported");
}

}  // namespace rayo::quant
