// Reference quantization: byte-identical with ggml on a fixed input, total on
// zero / huge / non-finite activations, self-consistent round trips, and
// bounded error for every format.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "quant/blocks.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"

namespace rayo::quant {
namespace {

const TensorType kQuantized[] = {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
                                 TensorType::Q8_0, TensorType::Q8_1, TensorType::Q2_K, TensorType::Q3_K,
                                 TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K, TensorType::Q8_K};

// Storage aligned for every block type.
struct Buffer {
  explicit Buffer(size_t bytes) : words((bytes + 7) / 8, 0) {}
  void* data() { return words.data(); }
  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(words.data()); }
  std::vector<uint64_t> words;
};

std::vector<uint8_t> quantize(TensorType type, const std::vector<float>& x) {
  const size_t bytes = row_bytes(type, x.size());
  Buffer buf(bytes);
  quantize_row(type, x.data(), buf.data(), static_cast<int64_t>(x.size()));
  return {buf.bytes(), buf.bytes() + bytes};
}

std::vector<float> dequantize(TensorType type, const std::vector<uint8_t>& q, size_t n) {
  Buffer buf(q.size());
  std::memcpy(buf.data(), q.data(), q.size());
  std::vector<float> y(n);
  dequantize_row(type, buf.data(), y.data(), static_cast<int64_t>(n));
  return y;
}

// Test rows from integer arithmetic only (exact on every platform): blocks of
// 32 at four magnitudes, some shifted positive, some all zero, some with a spike.
std::vector<float> golden_row(int n, uint32_t seed) {
  std::vector<float> x(n);
  uint32_t s = seed;
  const float scales[] = {1.0f, 0.25f, 8.0f, 1.0f / 1024};
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    const int block = i / 32;
    const float unit = static_cast<float>(static_cast<int32_t>(s >> 8) - (1 << 23)) / static_cast<float>(1 << 23);
    float v = unit * scales[block % 4];
    if (block % 5 == 1) v += 0.5f;
    if (block % 7 == 3) v = 0.0f;
    if (block % 11 == 6 && i % 32 == 5) v = -40.0f;
    x[i] = v;
  }
  return x;
}

uint64_t fnv1a(const std::vector<uint8_t>& bytes) {
  uint64_t h = 14695981039346656037ull;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 1099511628211ull;
  }
  return h;
}

std::vector<float> gaussian_row(int n, uint32_t seed, float sigma = 1.0f, float mean = 0.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(mean, sigma);
  std::vector<float> x(n);
  for (auto& v : x) v = dist(rng);
  return x;
}

// Digests of ggml's quantize_row_*_ref output (a faithful transcription of
// ggml-quants.c, compiled with -ffp-contract=off) on golden_row(256 * 77, 12345).
// Any deviation from ggml's arithmetic or packing changes the digest.
TEST(QuantQuantize, MatchesGgmlReferenceBytes) {
  const struct {
    TensorType type;
    uint64_t digest;
  } kGolden[] = {
      {TensorType::Q4_0, 0x35373b93ff151c05ull}, {TensorType::Q4_1, 0x534bb64c30ae481aull},
      {TensorType::Q5_0, 0x165930eec32abecdull}, {TensorType::Q5_1, 0xf3c18a9546dabad4ull},
      {TensorType::Q8_0, 0x46ee6808abe29747ull}, {TensorType::Q8_1, 0x31d713db3e0ad2adull},
      {TensorType::Q2_K, 0x44c1e63996591596ull}, {TensorType::Q3_K, 0x541c70bd0b221b85ull},
      {TensorType::Q4_K, 0xb738899053e5d1c0ull}, {TensorType::Q5_K, 0x07e7e3e748d0cdc9ull},
      {TensorType::Q6_K, 0x47fe3aacee2bb4a6ull}, {TensorType::Q8_K, 0xf8e3ee7440c7ca9cull},
  };
  const auto x = golden_row(256 * 77, 12345);
  for (const auto& g : kGolden) EXPECT_EQ(fnv1a(quantize(g.type, x)), g.digest) << type_name(g.type);
}

TEST(QuantQuantize, KnownQ8_0Block) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16) * 0.5f;  // amax 8 -> d = 8/127
  const auto q = quantize(TensorType::Q8_0, x);
  BlockQ8_0 b;
  std::memcpy(&b, q.data(), sizeof b);
  EXPECT_EQ(b.d, fp32_to_fp16(8.0f / 127));
  for (int j = 0; j < 32; ++j) EXPECT_EQ(b.qs[j], static_cast<int>(std::round((j - 16) * 0.5f * (127 / 8.0f)))) << j;
  EXPECT_EQ(b.qs[0], -127);
}

// With amax = 127 the Q8_0 scale is exactly 1, so the quants are roundf(x):
// ties go away from zero, values just below a tie go down.
TEST(QuantQuantize, Q8_0RoundsLikeRoundf) {
  std::vector<float> candidates;
  for (int k = -126; k <= 125; ++k) {
    const float tie = static_cast<float>(k) + 0.5f;
    candidates.push_back(tie);
    candidates.push_back(std::nextafter(tie, 0.0f));
    candidates.push_back(std::nextafter(tie, tie > 0 ? 1000.0f : -1000.0f));
  }
  candidates.push_back(0.49999997f);
  candidates.push_back(-0.49999997f);
  for (size_t start = 0; start < candidates.size(); start += 31) {
    std::vector<float> x(32, 0.0f);
    x[31] = 127.0f;  // amax 127 -> d = 1
    for (size_t j = 0; j < 31 && start + j < candidates.size(); ++j) x[j] = candidates[start + j];
    const auto q = quantize(TensorType::Q8_0, x);
    BlockQ8_0 b;
    std::memcpy(&b, q.data(), sizeof b);
    ASSERT_EQ(fp16_to_fp32(b.d), 1.0f);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(b.qs[j], static_cast<int>(std::round(x[j]))) << x[j];
  }
}

TEST(QuantQuantize, KnownQ4_0Block) {
  // Largest magnitude -4 (at index 3) -> d = 0.5, that value gets q = 0.
  std::vector<float> x(32, 0.0f);
  x[3] = -4.0f;
  x[20] = 3.5f;
  x[7] = 1.0f;
  const auto q = quantize(TensorType::Q4_0, x);
  BlockQ4_0 b;
  std::memcpy(&b, q.data(), sizeof b);
  EXPECT_EQ(fp16_to_fp32(b.d), 0.5f);
  EXPECT_EQ(b.qs[3] & 0xF, 0);
  EXPECT_EQ(b.qs[4] >> 4, 15);  // value 20 = 3.5 / 0.5 + 8
  EXPECT_EQ(b.qs[7] & 0xF, 10);
  EXPECT_EQ(b.qs[0] & 0xF, 8);
}

TEST(QuantQuantize, ZeroRowsGiveZeroBlocks) {
  const std::vector<float> zeros(512, 0.0f);
  for (TensorType t : kQuantized) {
    const auto q = quantize(t, zeros);
    const auto y = dequantize(t, q, zeros.size());
    for (float v : y) ASSERT_EQ(v, 0.0f) << type_name(t);
  }
  // The 8-bit activation formats: scale and every quant exactly zero.
  for (uint8_t byte : quantize(TensorType::Q8_0, zeros)) EXPECT_EQ(byte, 0);
  for (uint8_t byte : quantize(TensorType::Q8_1, zeros)) EXPECT_EQ(byte, 0);
  for (uint8_t byte : quantize(TensorType::Q8_K, zeros)) EXPECT_EQ(byte, 0);
}

// Blocks quantized by the *_0/*_1 formats decode to values that quantize back
// to the very same bytes (what llama-quantize's files show, see the parity test).
TEST(QuantQuantize, SimpleFormatsRoundTripTheirOwnBlocks) {
  for (TensorType t : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0}) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      const auto x = gaussian_row(32 * 64, seed, seed == 2 ? 0.01f : 1.0f, seed == 3 ? 0.7f : 0.0f);
      const auto q = quantize(t, x);
      EXPECT_EQ(quantize(t, dequantize(t, q, x.size())), q) << type_name(t) << " seed " << seed;
    }
  }
}

// Root-mean-square error relative to the data's RMS on Gaussian rows: loose
// bounds (about 1.3x what ggml's algorithms achieve here) that catch broken scales
// or packing without pinning the exact numbers.
TEST(QuantQuantize, ErrorIsBoundedForEveryFormat) {
  const struct {
    TensorType type;
    double max_relative_rms;
  } kBounds[] = {
      {TensorType::Q4_0, 0.11}, {TensorType::Q4_1, 0.10}, {TensorType::Q5_0, 0.055}, {TensorType::Q5_1, 0.05},
      {TensorType::Q8_0, 0.007}, {TensorType::Q8_1, 0.007}, {TensorType::Q2_K, 0.38}, {TensorType::Q3_K, 0.19},
      {TensorType::Q4_K, 0.09}, {TensorType::Q5_K, 0.047}, {TensorType::Q6_K, 0.023}, {TensorType::Q8_K, 0.009},
  };
  const auto x = gaussian_row(256 * 32, 99);
  double ref = 0;
  for (float v : x) ref += static_cast<double>(v) * v;
  for (const auto& b : kBounds) {
    const auto y = dequantize(b.type, quantize(b.type, x), x.size());
    double err = 0;
    for (size_t i = 0; i < x.size(); ++i) err += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
    const double rel = std::sqrt(err / ref);
    EXPECT_LT(rel, b.max_relative_rms) << type_name(b.type);
    EXPECT_GT(rel, 0.0) << type_name(b.type) << " cannot be lossless on Gaussian data";
  }
}

TEST(QuantQuantize, Q8_0HugeValuesSaturateTheScale) {
  std::vector<float> x(32, 1.0f);
  x[0] = 1e30f;
  x[1] = -1e30f;
  const auto q = quantize(TensorType::Q8_0, x);
  BlockQ8_0 b;
  std::memcpy(&b, q.data(), sizeof b);
  EXPECT_EQ(b.d, 0x7bff) << "largest finite half";
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], -127);
  for (float v : dequantize(TensorType::Q8_0, q, 32)) EXPECT_TRUE(std::isfinite(v));
}

TEST(QuantQuantize, EightBitFormatsSurviveNonFiniteInput) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (TensorType t : {TensorType::Q8_0, TensorType::Q8_1, TensorType::Q8_K}) {
    std::vector<float> x(256, 0.5f);
    x[3] = inf;
    x[40] = -inf;
    x[100] = nan;
    x[200] = std::numeric_limits<float>::max();
    const auto q = quantize(t, x);  // must not trap (the sanitizer build checks)
    EXPECT_EQ(q.size(), row_bytes(t, 256)) << type_name(t);
  }
}

// Subnormal inputs make 1/d overflow in ggml's arithmetic; the blocks must
// still decode to finite values no larger than the inputs.
TEST(QuantQuantize, EightBitFormatsHandleSubnormalRows) {
  const float tiny = std::numeric_limits<float>::denorm_min();
  std::vector<float> x(256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * tiny;
  for (TensorType t : {TensorType::Q8_0, TensorType::Q8_1, TensorType::Q8_K}) {
    for (float v : dequantize(t, quantize(t, x), x.size())) {
      ASSERT_TRUE(std::isfinite(v)) << type_name(t);
      EXPECT_LE(std::fabs(v), 3 * tiny) << type_name(t);
    }
  }
}

TEST(QuantQuantize, Q8_KLargeValuesAndBlockSums) {
  auto x = gaussian_row(512, 5, 1e30f);
  x[7] = std::numeric_limits<float>::max();
  const auto q = quantize(TensorType::Q8_K, x);
  for (int blk = 0; blk < 2; ++blk) {
    BlockQ8_K b;
    std::memcpy(&b, q.data() + blk * sizeof(BlockQ8_K), sizeof b);
    EXPECT_TRUE(std::isfinite(b.d));
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += b.qs[16 * g + i];
      EXPECT_EQ(b.bsums[g], sum);
    }
  }
  BlockQ8_K first;
  std::memcpy(&first, q.data(), sizeof first);
  EXPECT_EQ(first.qs[7], -127) << "the largest magnitude maps to -127";
}

TEST(QuantQuantize, Q8_1SumMatchesQuants) {
  const auto x = gaussian_row(64, 11);
  const auto q = quantize(TensorType::Q8_1, x);
  for (int blk = 0; blk < 2; ++blk) {
    BlockQ8_1 b;
    std::memcpy(&b, q.data() + blk * sizeof(BlockQ8_1), sizeof b);
    int sum = 0;
    for (int8_t v : b.qs) sum += v;
    // ggml multiplies by the unrounded float scale, then rounds to half.
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * blk + j]));
    EXPECT_EQ(b.s, fp32_to_fp16(static_cast<float>(sum) * (amax / 127)));
  }
}

TEST(QuantQuantize, UnsupportedTypeNamesIt) {
  const std::vector<float> x(256, 1.0f);
  std::vector<uint64_t> out(64);
  EXPECT_FALSE(can_quantize(TensorType::IQ4_XS));
  try {
    quantize_row(TensorType::IQ4_XS, x.data(), out.data(), 256);
    FAIL() << "expected rayo::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("IQ4_XS"), std::string::npos) << e.what();
  }
  EXPECT_THROW(quantize_row(static_cast<TensorType>(77), x.data(), out.data(), 32), Error);
  EXPECT_THROW(quantize_row(TensorType::Q4_K, x.data(), out.data(), 128), Error);  // half a super-block
}

TEST(QuantQuantize, CanQuantizeListsTheReferenceFormats) {
  for (TensorType t : kQuantized) EXPECT_TRUE(can_quantize(t)) << type_name(t);
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16}) EXPECT_TRUE(can_quantize(t));
  EXPECT_FALSE(can_quantize(TensorType::I8));
  EXPECT_FALSE(can_quantize(TensorType::TQ2_0));
}

TEST(QuantQuantize, FloatFormatsConvert) {
  const std::vector<float> x = {1.0f, -2.5f, 65504.0f, 1e-8f};
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
    const auto y = dequantize(t, quantize(t, x), x.size());
    EXPECT_EQ(y[0], 1.0f) << type_name(t);
    EXPECT_EQ(y[1], -2.5f) << type_name(t);
  }
  EXPECT_EQ(dequantize(TensorType::F16, quantize(TensorType::F16, x), 4)[2], 65504.0f);
}

}  // namespace
}  // namespace rayo::quant
