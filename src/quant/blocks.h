#pragma once
// Block layouts of ggml's quantized formats, byte for byte as stored in GGUF
// files (ggml-common.h). A row of n values is n / QK consecutive blocks.
// Halves are stored as raw uint16_t bits; convert with common/half.h.
#include <cstdint>

namespace rayo::quant {

constexpr int QK4_0 = 32, QK4_1 = 32, QK5_0 = 32, QK5_1 = 32, QK8_0 = 32, QK8_1 = 32;
constexpr int QK_K = 256;          // super-block size of the k-quants
constexpr int QK4_NL = 32, QK_MXFP4 = 32;
constexpr int K_SCALE_SIZE = 12;   // packed 6-bit scales/mins of Q4_K and Q5_K

// value = d * (q - 8), q in 0..15; qs[j] holds q[j] (low nibble) and q[j+16] (high).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[QK4_0 / 2];
};
// value = d * q + m, q in 0..15.
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[QK4_1 / 2];
};
// value = d * (q - 16), q 5 bits: 4 in qs (as Q4_0), bit 4 of q[j] in bit j of qh.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[QK5_0 / 2];
};
// value = d * q + m, q 5 bits as in Q5_0.
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[QK5_1 / 2];
};
// value = d * q, q signed 8 bits.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[QK8_0];
};
// Q8_0 plus s = d * sum(qs), for the formats with a min (Q4_1, Q5_1).
struct BlockQ8_1 {
  uint16_t d, s;
  int8_t qs[QK8_1];
};
// 16 sub-blocks of 16: scales[i] low nibble = scale, high nibble = min;
// value = d * scale * q - dmin * min, q 2 bits.
struct BlockQ2_K {
  uint8_t scales[QK_K / 16];
  uint8_t qs[QK_K / 4];
  uint16_t d, dmin;
};
// 16 sub-blocks of 16 with 6-bit signed scales packed in 12 bytes; q 3 bits:
// 2 low bits in qs, the high bit in hmask (set means +0, clear means -4).
struct BlockQ3_K {
  uint8_t hmask[QK_K / 8];
  uint8_t qs[QK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
// 8 sub-blocks of 32 with 6-bit scales and mins packed in 12 bytes;
// value = d * scale * q - dmin * min, q 4 bits.
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qs[QK_K / 2];
};
// As Q4_K with a fifth bit per value in qh.
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qh[QK_K / 8];
  uint8_t qs[QK_K / 2];
};
// 16 sub-blocks of 16 with signed 8-bit scales; q 6 bits (4 in ql, 2 in qh),
// value = d * scale * (q - 32).
struct BlockQ6_K {
  uint8_t ql[QK_K / 2];
  uint8_t qh[QK_K / 4];
  int8_t scales[QK_K / 16];
  uint16_t d;
};
// Activation format for k-quant dot products: float scale, bsums = sums of 16 qs.
struct BlockQ8_K {
  float d;
  int8_t qs[QK_K];
  int16_t bsums[QK_K / 16];
};

// value = d * kIq4nlValues[q], q 4 bits (non-linear levels), nibbles as Q4_0.
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[QK4_NL / 2];
};
// 8 sub-blocks of 32, each with a 6-bit scale (biased by 32): low 4 bits in
// scales_l (sub-block j in nibble j % 2 of byte j / 2), high 2 bits in bits
// 2j..2j+1 of scales_h; value = d * (scale - 32) * kIq4nlValues[q].
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[QK_K / 64];
  uint8_t qs[QK_K / 2];
};
// OCP MX FP4: value = 2^(e - 128) * kMxfp4Values[q] (the table holds twice the
// E2M1 values, hence the halved power of two); nibbles as Q4_0.
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[QK_MXFP4 / 2];
};

// Level tables of the non-linear 4-bit formats (ggml-common.h).
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockMXFP4) == 17);

}  // namespace rayo::quant
