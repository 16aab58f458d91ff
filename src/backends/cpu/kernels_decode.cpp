#include "backends/cpu/kernels_decode.h"

#include <cstring>

#include "common/error.h"
#include "common/half.h"
#include "quant/blocks.h"
#include "quant/k_scales.h"

namespace rayo::cpu {

using namespace rayo::quant;

int sub_block_size(TensorType type) {
  switch (type) {
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q6_K: return 16;
    default: return 32;
  }
}

namespace {

void decode_q4_0(const BlockQ4_0* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; ++i, q += 32) {
    scale[i] = fp16_to_fp32(b[i].d);
    min[i] = 0.0f;
    for (int j = 0; j < 16; ++j) {
      q[j] = static_cast<int8_t>((b[i].qs[j] & 0xf) - 8);
      q[j + 16] = static_cast<int8_t>((b[i].qs[j] >> 4) - 8);
    }
  }
}

void decode_q4_1(const BlockQ4_1* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; ++i, q += 32) {
    scale[i] = fp16_to_fp32(b[i].d);
    min[i] = -fp16_to_fp32(b[i].m);
    for (int j = 0; j < 16; ++j) {
      q[j] = static_cast<int8_t>(b[i].qs[j] & 0xf);
      q[j + 16] = static_cast<int8_t>(b[i].qs[j] >> 4);
    }
  }
}

// Q5_0/Q5_1: fifth bit of value j in bit j of qh.
template <typename Block>
void decode_q5_values(const Block& b, int offset, int8_t* q) {
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  for (int j = 0; j < 16; ++j) {
    const int h0 = ((qh >> j) << 4) & 0x10;
    const int h1 = (qh >> (j + 12)) & 0x10;
    q[j] = static_cast<int8_t>(((b.qs[j] & 0xf) | h0) - offset);
    q[j + 16] = static_cast<int8_t>(((b.qs[j] >> 4) | h1) - offset);
  }
}

void decode_q5_0(const BlockQ5_0* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; ++i, q += 32) {
    scale[i] = fp16_to_fp32(b[i].d);
    min[i] = 0.0f;
    decode_q5_values(b[i], 16, q);
  }
}

void decode_q5_1(const BlockQ5_1* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; ++i, q += 32) {
    scale[i] = fp16_to_fp32(b[i].d);
    min[i] = -fp16_to_fp32(b[i].m);
    decode_q5_values(b[i], 0, q);
  }
}

void decode_q8_0(const BlockQ8_0* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; ++i, q += 32) {
    scale[i] = fp16_to_fp32(b[i].d);
    min[i] = 0.0f;
    std::memcpy(q, b[i].qs, 32);
  }
}

void decode_q2_k(const BlockQ2_K* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
    for (int s = 0; s < 16; ++s) {
      scale[16 * i + s] = d * static_cast<float>(b[i].scales[s] & 0xf);
      min[16 * i + s] = dmin * static_cast<float>(b[i].scales[s] >> 4);
    }
    // Two halves of 128 values; in each, four 2-bit planes of qs[32 n .. 32 n + 31].
    for (int n = 0; n < 2; ++n)
      for (int shift = 0; shift < 4; ++shift)
        for (int l = 0; l < 32; ++l) q[128 * n + 32 * shift + l] = static_cast<int8_t>((b[i].qs[32 * n + l] >> (2 * shift)) & 3);
    q += 256;
  }
}

void decode_q3_k(const BlockQ3_K* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    int8_t sc[16];
    unpack_q3_k_scales(b[i].scales, sc);
    for (int s = 0; s < 16; ++s) {
      scale[16 * i + s] = d * static_cast<float>(sc[s]);
      min[16 * i + s] = 0.0f;
    }
    // As Q2_K; the high bit of value 32 j + l (within the 256) is bit j of hmask[l].
    for (int n = 0; n < 2; ++n)
      for (int shift = 0; shift < 4; ++shift)
        for (int l = 0; l < 32; ++l) {
          const int j = 4 * n + shift;
          const int lo = (b[i].qs[32 * n + l] >> (2 * shift)) & 3;
          const int hi = (b[i].hmask[l] >> j) & 1;
          q[128 * n + 32 * shift + l] = static_cast<int8_t>(lo - (hi ? 0 : 4));
        }
    q += 256;
  }
}

// Q4_K and Q5_K: the 8 sub-block scales and mins of one super-block, from
// their 6-bit packed form.
template <typename Block>
void decode_k4_scales(const Block& b, float* scale, float* min) {
  const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
  for (int s = 0; s < 8; ++s) {
    uint8_t sc, m;
    get_scale_min_k4(s, b.scales, &sc, &m);
    scale[s] = d * static_cast<float>(sc);
    min[s] = dmin * static_cast<float>(m);
  }
}

void decode_q4_k(const BlockQ4_K* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; ++i) {
    decode_k4_scales(b[i], scale + 8 * i, min + 8 * i);
    // 64 values per 32 bytes: low nibbles first, then high nibbles.
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        q[64 * c + l] = static_cast<int8_t>(b[i].qs[32 * c + l] & 0xf);
        q[64 * c + 32 + l] = static_cast<int8_t>(b[i].qs[32 * c + l] >> 4);
      }
    q += 256;
  }
}

void decode_q5_k(const BlockQ5_K* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; ++i) {
    decode_k4_scales(b[i], scale + 8 * i, min + 8 * i);
    // As Q4_K; the fifth bit of value 32 s + l is bit s of qh[l].
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        const int h0 = (b[i].qh[l] >> (2 * c)) & 1, h1 = (b[i].qh[l] >> (2 * c + 1)) & 1;
        q[64 * c + l] = static_cast<int8_t>((b[i].qs[32 * c + l] & 0xf) | (h0 << 4));
        q[64 * c + 32 + l] = static_cast<int8_t>((b[i].qs[32 * c + l] >> 4) | (h1 << 4));
      }
    q += 256;
  }
}

void decode_q6_k(const BlockQ6_K* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    for (int s = 0; s < 16; ++s) {
      scale[16 * i + s] = d * static_cast<float>(b[i].scales[s]);
      min[16 * i + s] = 0.0f;
    }
    // Two halves of 128: ql[64 n ..] holds 4 low bits, qh[32 n ..] the 2 high bits
    // of values l, l+32, l+64, l+96 (in bit pairs 0, 2, 4, 6).
    for (int n = 0; n < 2; ++n) {
      const uint8_t* ql = b[i].ql + 64 * n;
      const uint8_t* qh = b[i].qh + 32 * n;
      int8_t* o = q + 128 * n;
      for (int l = 0; l < 32; ++l) {
        o[l] = static_cast<int8_t>(((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32);
        o[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32);
        o[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        o[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
    }
    q += 256;
  }
}

// IQ4_NL, IQ4_XS: q is the level of each index (signed, -127..113).
void decode_iq4_values(const uint8_t* qs, int8_t* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = kIq4nlValues[qs[j] & 0xf];
    q[j + 16] = kIq4nlValues[qs[j] >> 4];
  }
}

void decode_iq4_nl(const BlockIQ4_NL* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; ++i, q += 32) {
    scale[i] = fp16_to_fp32(b[i].d);
    min[i] = 0.0f;
    decode_iq4_values(b[i].qs, q);
  }
}

void decode_iq4_xs(const BlockIQ4_XS* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    for (int s = 0; s < 8; ++s, q += 32) {
      const int ls = ((b[i].scales_l[s / 2] >> (4 * (s % 2))) & 0xf) | (((b[i].scales_h >> (2 * s)) & 3) << 4);
      scale[8 * i + s] = d * static_cast<float>(ls - 32);
      min[8 * i + s] = 0.0f;
      decode_iq4_values(b[i].qs + 16 * s, q);
    }
  }
}

}  // namespace

void decode_row(TensorType type, const void* row, int64_t cols, int8_t* q, float* scale, float* min) {
  const auto& ti = info(type);
  const int64_t nb = cols / ti.block_size;
  switch (type) {
    case TensorType::Q4_0: return decode_q4_0(static_cast<const BlockQ4_0*>(row), nb, q, scale, min);
    case TensorType::Q4_1: return decode_q4_1(static_cast<const BlockQ4_1*>(row), nb, q, scale, min);
    case TensorType::Q5_0: return decode_q5_0(static_cast<const BlockQ5_0*>(row), nb, q, scale, min);
    case TensorType::Q5_1: return decode_q5_1(static_cast<const BlockQ5_1*>(row), nb, q, scale, min);
    case TensorType::Q8_0: return decode_q8_0(static_cast<const BlockQ8_0*>(row), nb, q, scale, min);
    case TensorType::Q2_K: return decode_q2_k(static_cast<const BlockQ2_K*>(row), nb, q, scale, min);
    case TensorType::Q3_K: return decode_q3_k(static_cast<const BlockQ3_K*>(row), nb, q, scale, min);
    case TensorType::Q4_K: return decode_q4_k(static_cast<const BlockQ4_K*>(row), nb, q, scale, min);
    case TensorType::Q5_K: return decode_q5_k(static_cast<const BlockQ5_K*>(row), nb, q, scale, min);
    case TensorType::Q6_K: return decode_q6_k(static_cast<const BlockQ6_K*>(row), nb, q, scale, min);
    case TensorType::IQ4_NL: return decode_iq4_nl(static_cast<const BlockIQ4_NL*>(row), nb, q, scale, min);
    case TensorType::IQ4_XS: return decode_iq4_xs(static_cast<const BlockIQ4_XS*>(row), nb, q, scale, min);
    default: fail("decode_row: unsupported weight type ", type_name(type));
  }
}

}  // namespace rayo::cpu
