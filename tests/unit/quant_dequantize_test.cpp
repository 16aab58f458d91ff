// Dequantization of hand-built blocks: each test sets a few fields and checks
// the values against the format's definition written out independently, so a
// wrong bit position or scale decoding fails here without any model file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "quant/blocks.h"
#include "quant/dequantize.h"
#include "quant/k_scales.h"

namespace rayo::quant {
namespace {

template <typename Block>
std::vector<float> dequant(TensorType type, const Block& b, int n) {
  std::vector<float> out(n, -12345.0f);
  dequantize_row(type, &b, out.data(), n);
  return out;
}

TEST(QuantDequantize, Q4_0NibbleOrderAndOffset) {
  BlockQ4_0 b{};
  b.d = fp32_to_fp16(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = dequant(TensorType::Q4_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * 0.5f) << j;
    EXPECT_EQ(y[j + 16], (7 - j) * 0.5f) << j;
  }
}

TEST(QuantDequantize, Q4_1ScaleAndMin) {
  BlockQ4_1 b{};
  b.d = fp32_to_fp16(0.25f);
  b.m = fp32_to_fp16(-1.0f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (3 << 4));
  const auto y = dequant(TensorType::Q4_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j * 0.25f - 1.0f);
    EXPECT_EQ(y[j + 16], 3 * 0.25f - 1.0f);
  }
}

TEST(QuantDequantize, Q5_0FifthBitFromQh) {
  BlockQ5_0 b{};
  b.d = fp32_to_fp16(1.0f);
  // Fifth bit set for values 1 and 17 only (bits 1 and 17 of the little-endian qh).
  const uint32_t qh = (1u << 1) | (1u << 17);
  std::memcpy(b.qh, &qh, 4);
  for (int j = 0; j < 16; ++j) b.qs[j] = 0x21;  // low nibble 1, high nibble 2
  const auto y = dequant(TensorType::Q5_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j == 1 ? 17 : 1) - 16.0f) << j;
    EXPECT_EQ(y[j + 16], (j == 1 ? 18 : 2) - 16.0f) << j;
  }
}

TEST(QuantDequantize, Q5_1FifthBitWithMin) {
  BlockQ5_1 b{};
  b.d = fp32_to_fp16(2.0f);
  b.m = fp32_to_fp16(0.5f);
  const uint32_t qh = 0x80000001u;  // values 0 and 31
  std::memcpy(b.qh, &qh, 4);
  const auto y = dequant(TensorType::Q5_1, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], (j == 0 || j == 31 ? 16 * 2.0f : 0.0f) + 0.5f) << j;
}

TEST(QuantDequantize, Q8_0SignedQuants) {
  BlockQ8_0 b{};
  b.d = fp32_to_fp16(0.125f);
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j * 8 - 128);
  const auto y = dequant(TensorType::Q8_0, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], (j * 8 - 128) * 0.125f);
}

TEST(QuantDequantize, Q8_KFloatScale) {
  BlockQ8_K b{};
  b.d = -0.75f;
  for (int j = 0; j < 256; ++j) b.qs[j] = static_cast<int8_t>(j - 128);
  const auto y = dequant(TensorType::Q8_K, b, 256);
  for (int j = 0; j < 256; ++j) EXPECT_EQ(y[j], -0.75f * (j - 128));
}

TEST(QuantDequantize, Q2_KLayout) {
  BlockQ2_K b{};
  b.d = fp32_to_fp16(1.0f);
  b.dmin = fp32_to_fp16(0.5f);
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<uint8_t>((s % 15 + 1) | ((s % 4) << 4));
  // Value v: half h = v / 128, k = (v % 128) / 32, l = v % 32 -> bits 2k of qs[32h + l].
  auto level = [](int v) { return (v * 7 + 3) % 4; };
  for (int v = 0; v < 256; ++v) {
    const int h = v / 128, k = (v % 128) / 32, l = v % 32;
    b.qs[32 * h + l] = static_cast<uint8_t>(b.qs[32 * h + l] | (level(v) << (2 * k)));
  }
  const auto y = dequant(TensorType::Q2_K, b, 256);
  for (int v = 0; v < 256; ++v) {
    const int s = v / 16;
    const float scale = static_cast<float>(b.scales[s] & 0xF), min = 0.5f * static_cast<float>(b.scales[s] >> 4);
    EXPECT_EQ(y[v], scale * level(v) - min) << v;
  }
}

TEST(QuantDequantize, Q3_KLayoutAndHighBit) {
  BlockQ3_K b{};
  b.d = fp32_to_fp16(0.5f);
  uint8_t biased[16];
  for (int s = 0; s < 16; ++s) biased[s] = static_cast<uint8_t>((s * 5 + 7) % 64);
  pack_q3_k_scales(biased, b.scales);
  auto level = [](int v) { return (v * 5 + 1) % 8; };  // 0..7, value = level - 4
  for (int v = 0; v < 256; ++v) {
    const int h = v / 128, k = (v % 128) / 32, l = v % 32;
    b.qs[32 * h + l] = static_cast<uint8_t>(b.qs[32 * h + l] | ((level(v) & 3) << (2 * k)));
    if (level(v) & 4) b.hmask[v % 32] = static_cast<uint8_t>(b.hmask[v % 32] | (1 << (v / 32)));
  }
  const auto y = dequant(TensorType::Q3_K, b, 256);
  for (int v = 0; v < 256; ++v) {
    const float dl = 0.5f * static_cast<float>(biased[v / 16] - 32);
    EXPECT_EQ(y[v], dl * static_cast<float>(level(v) - 4)) << v;
  }
}

TEST(QuantDequantize, Q3_KScalePackingRoundTrips) {
  uint8_t biased[16], packed[12];
  for (int s = 0; s < 16; ++s) biased[s] = static_cast<uint8_t>(63 - s * 3);
  pack_q3_k_scales(biased, packed);
  int8_t scales[16];
  unpack_q3_k_scales(packed, scales);
  for (int s = 0; s < 16; ++s) EXPECT_EQ(scales[s], biased[s] - 32);
}

TEST(QuantDequantize, K4ScalePackingRoundTrips) {
  uint8_t packed[12] = {};
  for (int j = 0; j < 8; ++j) set_scale_min_k4(j, static_cast<uint8_t>(63 - 7 * j), static_cast<uint8_t>(5 * j + 20), packed);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    get_scale_min_k4(j, packed, &sc, &m);
    EXPECT_EQ(sc, 63 - 7 * j);
    EXPECT_EQ(m, 5 * j + 20);
  }
}

TEST(QuantDequantize, Q4_KLayout) {
  BlockQ4_K b{};
  b.d = fp32_to_fp16(0.5f);
  b.dmin = fp32_to_fp16(0.25f);
  for (int j = 0; j < 8; ++j) set_scale_min_k4(j, static_cast<uint8_t>(j * 8 + 1), static_cast<uint8_t>(60 - j * 7), b.scales);
  auto level = [](int v) { return (v * 11 + 5) % 16; };
  // Value v: group g = v / 64; low nibble of qs[32g + l] for l = v % 64 < 32, else high nibble.
  for (int v = 0; v < 256; ++v) {
    const int g = v / 64, r = v % 64;
    b.qs[32 * g + r % 32] = static_cast<uint8_t>(b.qs[32 * g + r % 32] | (level(v) << (r < 32 ? 0 : 4)));
  }
  const auto y = dequant(TensorType::Q4_K, b, 256);
  for (int v = 0; v < 256; ++v) {
    const int s = v / 32;
    const float d = 0.5f * static_cast<float>(s * 8 + 1), m = 0.25f * static_cast<float>(60 - s * 7);
    EXPECT_EQ(y[v], d * level(v) - m) << v;
  }
}

TEST(QuantDequantize, Q5_KLayout) {
  BlockQ5_K b{};
  b.d = fp32_to_fp16(1.0f);
  b.dmin = fp32_to_fp16(2.0f);
  for (int j = 0; j < 8; ++j) set_scale_min_k4(j, static_cast<uint8_t>(j + 1), static_cast<uint8_t>(j), b.scales);
  auto level = [](int v) { return (v * 13 + 7) % 32; };
  for (int v = 0; v < 256; ++v) {
    const int g = v / 64, r = v % 64, l = r % 32;
    b.qs[32 * g + l] = static_cast<uint8_t>(b.qs[32 * g + l] | ((level(v) & 0xF) << (r < 32 ? 0 : 4)));
    if (level(v) & 16) b.qh[l] = static_cast<uint8_t>(b.qh[l] | (1 << (2 * g + (r < 32 ? 0 : 1))));
  }
  const auto y = dequant(TensorType::Q5_K, b, 256);
  for (int v = 0; v < 256; ++v) {
    const int s = v / 32;
    EXPECT_EQ(y[v], static_cast<float>(s + 1) * level(v) - 2.0f * s) << v;
  }
}

TEST(QuantDequantize, Q6_KLayout) {
  BlockQ6_K b{};
  b.d = fp32_to_fp16(0.5f);
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<int8_t>(s * 17 - 128);
  auto level = [](int v) { return (v * 29 + 3) % 64; };  // value = level - 32
  // Value v: half h = v / 128, r = v % 128, quarter k = r / 32, l = r % 32:
  // low 4 bits in ql[64h + l + 32 * (k % 2)] (nibble k / 2), high 2 bits in
  // bits 2k of qh[32h + l].
  for (int v = 0; v < 256; ++v) {
    const int h = v / 128, r = v % 128, k = r / 32, l = r % 32;
    uint8_t& ql = b.ql[64 * h + l + 32 * (k % 2)];
    ql = static_cast<uint8_t>(ql | ((level(v) & 0xF) << (4 * (k / 2))));
    b.qh[32 * h + l] = static_cast<uint8_t>(b.qh[32 * h + l] | ((level(v) >> 4) << (2 * k)));
  }
  const auto y = dequant(TensorType::Q6_K, b, 256);
  for (int v = 0; v < 256; ++v) {
    const float ds = 0.5f * static_cast<float>(b.scales[v / 16]);
    EXPECT_EQ(y[v], ds * static_cast<float>(level(v) - 32)) << v;
  }
}

// The non-linear level table, written out from ggml-common.h's kvalues_iq4nl.
constexpr int kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

TEST(QuantDequantize, IQ4_NLLevelTable) {
  BlockIQ4_NL b{};
  b.d = fp32_to_fp16(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = dequant(TensorType::IQ4_NL, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * kIq4Levels[j]) << j;
    EXPECT_EQ(y[j + 16], 0.5f * kIq4Levels[15 - j]) << j;
  }
}

TEST(QuantDequantize, IQ4_XSSubBlockScales) {
  BlockIQ4_XS b{};
  b.d = fp32_to_fp16(0.25f);
  const int scale[8] = {0, 63, 32, 33, 31, 17, 48, 5};  // biased by 32
  for (int s = 0; s < 8; ++s) {
    b.scales_l[s / 2] = static_cast<uint8_t>(b.scales_l[s / 2] | ((scale[s] & 0xF) << (4 * (s % 2))));
    b.scales_h = static_cast<uint16_t>(b.scales_h | ((scale[s] >> 4) << (2 * s)));
  }
  auto level = [](int v) { return (v * 7 + 2) % 16; };
  // Sub-block s: 16 bytes of qs, low nibbles values 0..15, high nibbles 16..31.
  for (int v = 0; v < 256; ++v) {
    const int s = v / 32, r = v % 32;
    b.qs[16 * s + r % 16] = static_cast<uint8_t>(b.qs[16 * s + r % 16] | (level(v) << (r < 16 ? 0 : 4)));
  }
  const auto y = dequant(TensorType::IQ4_XS, b, 256);
  for (int v = 0; v < 256; ++v)
    EXPECT_EQ(y[v], 0.25f * static_cast<float>(scale[v / 32] - 32) * kIq4Levels[level(v)]) << v;
}

TEST(QuantDequantize, MXFP4SharedExponent) {
  const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};  // FP4 E2M1 magnitudes
  for (int e : {0, 1, 2, 127, 130, 254}) {
    BlockMXFP4 b{};
    b.e = static_cast<uint8_t>(e);
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    const auto y = dequant(TensorType::MXFP4, b, 32);
    const float scale = std::ldexp(1.0f, e - 127);  // 2^(e-127) times the E2M1 value
    for (int j = 0; j < 16; ++j) {
      const float v0 = (j & 8 ? -1.0f : 1.0f) * e2m1[j & 7] * scale;
      const float v1 = ((15 - j) & 8 ? -1.0f : 1.0f) * e2m1[(15 - j) & 7] * scale;
      EXPECT_EQ(y[j], v0) << "e " << e << " j " << j;
      EXPECT_EQ(y[j + 16], v1) << "e " << e << " j " << j;
    }
  }
}

TEST(QuantDequantize, HalfAndBFloat16) {
  const uint16_t f16[2] = {0x3c00, 0xc100};  // 1, -2.5
  const uint16_t bf16[2] = {0x3f80, 0xc020};  // 1, -2.5
  float y[2];
  dequantize_row(TensorType::F16, f16, y, 2);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.5f);
  dequantize_row(TensorType::BF16, bf16, y, 2);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.5f);
}

TEST(QuantDequantize, ZeroBlocksGiveZeros) {
  for (TensorType t : {TensorType::Q4_0, TensorType::Q5_0, TensorType::Q8_0, TensorType::Q4_1, TensorType::Q5_1,
                       TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
                       TensorType::Q8_K}) {
    const auto& ti = info(t);
    std::vector<uint64_t> zeros((ti.block_bytes * 2 + 7) / 8, 0);  // uint64_t: aligned for every block
    std::vector<float> y(ti.block_size * 2, 1.0f);
    dequantize_row(t, zeros.data(), y.data(), static_cast<int64_t>(y.size()));
    for (float v : y) EXPECT_EQ(v, 0.0f) << ti.name;
  }
}

TEST(QuantDequantize, UnsupportedTypeNamesIt) {
  uint8_t buf[256] = {};
  float y[256];
  EXPECT_FALSE(can_dequantize(TensorType::IQ2_XXS));
  try {
    dequantize_row(TensorType::IQ2_XXS, buf, y, 256);
    FAIL() << "expected rayo::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("IQ2_XXS"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dequantize_row(static_cast<TensorType>(99), buf, y, 32), Error);
}

TEST(QuantDequantize, RejectsPartialBlocks) {
  alignas(4) uint8_t buf[64] = {};
  float y[64];
  EXPECT_THROW(dequantize_row(TensorType::Q4_0, buf, y, 31), Error);
  EXPECT_THROW(dequantize_row(TensorType::Q4_0, buf, y, -32), Error);
  EXPECT_NO_THROW(dequantize_row(TensorType::Q4_0, buf, y, 0));
}

TEST(QuantDequantize, CanDequantizeListsTheReferenceFormats) {
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q4_0, TensorType::Q4_1,
                       TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0, TensorType::Q2_K, TensorType::Q3_K,
                       TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K, TensorType::Q8_K})
    EXPECT_TRUE(can_dequantize(t)) << type_name(t);
  for (TensorType t : {TensorType::IQ4_NL, TensorType::IQ4_XS, TensorType::MXFP4}) EXPECT_TRUE(can_dequantize(t));
  EXPECT_FALSE(can_dequantize(TensorType::I32));
  EXPECT_FALSE(can_dequantize(TensorType::IQ3_S));
}

}  // namespace
}  // namespace rayo::quant
