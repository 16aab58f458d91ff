// Checks the CPU matmul for every weight type on every instruction-set path
// this machine has, against float64 references:
//  - tight: dequantized weights (the shared reference dequantizer) times the
//    dequantized quantized activations; only summation order may differ;
//  - loose: dequantized weights times the original float activations, within
//    the rigorous bound of the activation quantization error.
#include "backends/cpu/matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/matmul_activations.h"
#include "common/error.h"
#include "common/half.h"
#include "quant/dequantize.h"

namespace rayo::cpu {
namespace {

const TensorType kTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16,   TensorType::Q4_0,
                             TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,   TensorType::Q8_0,
                             TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K,   TensorType::Q5_K,
                             TensorType::Q6_K, TensorType::IQ4_NL, TensorType::IQ4_XS};

// Restores the instruction set chosen at start-up when a test ends.
class IsaGuard {
 public:
  explicit IsaGuard(Isa isa) : saved_(active_isa()) { set_active_isa(isa); }
  ~IsaGuard() { set_active_isa(saved_); }

 private:
  Isa saved_;
};

uint16_t random_half_scale(std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> mag(lo, hi);
  const float v = (rng() & 1) ? mag(rng) : -mag(rng);
  return fp32_to_fp16(v);
}

void put_half(std::vector<uint8_t>& buf, size_t offset, uint16_t h) { std::memcpy(buf.data() + offset, &h, 2); }

// Random weights: random bytes, then every float field set to a finite, moderate value.
std::vector<uint8_t> random_weights(TensorType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  const auto& ti = info(type);
  const size_t bytes = row_bytes(type, cols) * rows;
  std::vector<uint8_t> buf(bytes);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  const int64_t n = rows * cols;
  if (type == TensorType::F32) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = val(rng);
      std::memcpy(buf.data() + 4 * i, &v, 4);
    }
    return buf;
  }
  if (type == TensorType::F16 || type == TensorType::BF16) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = val(rng);
      put_half(buf, 2 * i, type == TensorType::F16 ? fp32_to_fp16(v) : fp32_to_bf16(v));
    }
    return buf;
  }
  // Offsets of the half-precision scale fields within a block (blocks.h).
  std::vector<size_t> halves;
  switch (type) {
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
    case TensorType::IQ4_NL:
    case TensorType::IQ4_XS: halves = {0}; break;
    case TensorType::Q4_1:
    case TensorType::Q5_1:
    case TensorType::Q4_K:
    case TensorType::Q5_K: halves = {0, 2}; break;
    case TensorType::Q2_K: halves = {80, 82}; break;
    case TensorType::Q3_K: halves = {108}; break;
    case TensorType::Q6_K: halves = {208}; break;
    default: ADD_FAILURE() << "no generator for " << type_name(type);
  }
  const bool kquant = ti.block_size == 256;
  for (size_t blk = 0; blk < bytes / ti.block_bytes; ++blk)
    for (size_t off : halves)
      put_half(buf, blk * ti.block_bytes + off,
               kquant ? random_half_scale(rng, 1e-4f, 4e-3f) : random_half_scale(rng, 1e-3f, 0.1f));
  return buf;
}

std::vector<float> dequantized(TensorType type, const std::vector<uint8_t>& w, int64_t rows, int64_t cols) {
  std::vector<float> out(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    quant::dequantize_row(type, w.data() + r * row_bytes(type, cols), out.data() + r * cols, cols);
  return out;
}

// The activations as the quantized kernels see them (dequantized back to
// float), each value's maximum quantization error (d / 2; for 32-value
// blocks, whose d is rounded to half precision after q was made, plus |q|
// times that rounding, 2^-11 d), and for 32-value blocks the half-precision
// d * sum the kernels multiply a Q4_1/Q5_1 min with.
void quantized_activations(TensorType type, const float* x, int64_t cols, std::vector<double>& xq,
                           std::vector<double>& err, std::vector<double>& block_sums) {
  xq.assign(cols, 0.0);
  err.assign(cols, 0.0);
  block_sums.assign(cols / 32, 0.0);
  if (!info(type).quantized) {
    for (int64_t k = 0; k < cols; ++k) xq[k] = x[k];
    return;
  }
  if (info(type).block_size == 32) {
    std::vector<ActBlock32> b(cols / 32);
    quantize_act32(Isa::Scalar, x, cols, b.data());
    for (int64_t k = 0; k < cols; ++k) {
      xq[k] = double(b[k / 32].d) * b[k / 32].qs[k % 32];
      err[k] = b[k / 32].d * (0.5 + 0.001) + std::abs(xq[k]) * 0x1p-10;
    }
    for (int64_t i = 0; i < cols / 32; ++i) block_sums[i] = b[i].s;
  } else {
    std::vector<ActBlockK> b(cols / 256);
    quantize_actk(Isa::Scalar, x, cols, b.data());
    for (int64_t k = 0; k < cols; ++k) {
      xq[k] = double(b[k / 256].d) * b[k / 256].qs[k % 256];
      err[k] = b[k / 256].d * 0.5;
    }
  }
}

struct Case {
  TensorType type;
  Isa isa;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  return std::string(type_name(info.param.type)) + "_" + std::string(isa_name(info.param.isa));
}

class MatmulTest : public testing::TestWithParam<Case> {};

// Runs one product and checks every output against both references.
void check_product(TensorType type, int64_t rows, int64_t cols, int64_t n_tokens, ThreadPool& pool,
                   std::mt19937& rng, int64_t y_stride = 0) {
  SCOPED_TRACE(cat(type_name(type), " ", rows, "x", cols, " tokens ", n_tokens, " threads ", pool.size(), " isa ",
                   isa_name(active_isa())));
  const auto wbytes = random_weights(type, rows, cols, rng);
  const auto wf = dequantized(type, wbytes, rows, cols);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n_tokens * cols);
  for (auto& v : x) v = nd(rng);

  const MatmulWeight w = prepare_weight(type, wbytes.data(), rows, cols);
  std::vector<std::byte> ws(matmul_workspace_bytes(w, n_tokens, pool.size()));
  const int64_t ys = y_stride ? y_stride : rows;
  std::vector<float> y(n_tokens * ys, -777.0f);
  matmul(pool, w, x.data(), n_tokens, y.data(), ws.data(), {0, y_stride});

  // Q4_1 and Q5_1 blocks add a min m to every value (f16 at byte 2 of the
  // block): the kernels multiply it by the activations' half-precision block
  // sum rather than by the sum of the dequantized activations.
  const bool has_min = type == TensorType::Q4_1 || type == TensorType::Q5_1;
  auto block_min = [&](int64_t r, int64_t b) {
    uint16_t h;
    std::memcpy(&h, wbytes.data() + r * row_bytes(type, cols) + b * info(type).block_bytes + 2, 2);
    return static_cast<double>(fp16_to_fp32(h));
  };
  std::vector<double> xq, err, block_sums;
  for (int64_t t = 0; t < n_tokens; ++t) {
    quantized_activations(type, x.data() + t * cols, cols, xq, err, block_sums);
    for (int64_t r = 0; r < rows; ++r) {
      double tight = 0, tight_abs = 0, loose = 0, loose_bound = 0;
      for (int64_t k = 0; k < cols; ++k) {
        const double wv = wf[r * cols + k];
        const double m = has_min ? block_min(r, k / 32) : 0.0;
        tight += (wv - m) * xq[k];
        tight_abs += std::fabs(wv * xq[k]);
        loose += wv * x[t * cols + k];
        loose_bound += std::fabs(wv) * err[k];
      }
      if (has_min)
        for (int64_t b = 0; b < cols / 32; ++b) {
          tight += block_min(r, b) * block_sums[b];
          loose_bound += std::fabs(block_min(r, b) * block_sums[b]) * 0x1p-10;  // s's rounding
        }
      const double got = y[t * ys + r];
      ASSERT_TRUE(std::isfinite(got)) << "row " << r << " token " << t;
      ASSERT_NEAR(got, tight, 2e-5 * tight_abs + 1e-6) << "tight, row " << r << " token " << t;
      ASSERT_NEAR(got, loose, 1.0001 * loose_bound + 2e-5 * tight_abs + 1e-6) << "loose, row " << r << " token " << t;
    }
    for (int64_t r = rows; r < ys; ++r) ASSERT_EQ(y[t * ys + r], -777.0f) << "wrote past the row, column " << r;
  }
}

TEST_P(MatmulTest, MatchesFloat64ReferenceOnOddShapes) {
  const auto [type, isa] = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << "this CPU lacks " << isa_name(isa);
  IsaGuard guard(isa);
  std::mt19937 rng(1234 + static_cast<int>(type) * 7 + static_cast<int>(isa));
  const int64_t block = info(type).block_size == 1 ? 16 : info(type).block_size;
  ThreadPool pool(2);
  const std::vector<int64_t> col_options = info(type).quantized
                                               ? std::vector<int64_t>{block, 3 * block}
                                               : std::vector<int64_t>{7, 16, 67};
  for (int64_t rows : {1, 16, 37})
    for (int64_t cols : col_options)
      // 1-8 tokens are one tile of each size; 11 and 33 split into tiles of 6 + 5 and 7, 7, 7, 6, 6.
      for (int64_t n_tokens : {1, 2, 3, 4, 5, 6, 7, 8, 11, 33}) check_product(type, rows, cols, n_tokens, pool, rng);
}

TEST_P(MatmulTest, MatchesFloat64ReferenceAtRealModelWidths) {
  // Widths of real small models (SmolLM2: 576, Qwen2.5-0.5B: 896, whose rows
  // llama.cpp stores in 32-value formats) and a row count that is no multiple
  // of any interleave, for decode, a few tokens and a prompt chunk.
  const auto [type, isa] = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << "this CPU lacks " << isa_name(isa);
  IsaGuard guard(isa);
  std::mt19937 rng(4321 + static_cast<int>(type) * 5 + static_cast<int>(isa));
  ThreadPool pool(2);
  const bool super = info(type).block_size == 256;
  for (int64_t cols : super ? std::vector<int64_t>{512, 768} : std::vector<int64_t>{576, 896})
    for (int64_t n_tokens : {1, 7, 67}) check_product(type, 1000, cols, n_tokens, pool, rng);
}

TEST_P(MatmulTest, ThreadCountsAndOutputStride) {
  const auto [type, isa] = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << "this CPU lacks " << isa_name(isa);
  IsaGuard guard(isa);
  std::mt19937 rng(99 + static_cast<int>(type));
  const int64_t cols = info(type).quantized ? 2 * info(type).block_size : 48;
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    check_product(type, 70, cols, 5, pool, rng, /*y_stride=*/75);
    check_product(type, 70, cols, 1, pool, rng);
  }
}

TEST_P(MatmulTest, BatchedTokensMatchOneAtATimeBitForBit) {
  // A token's output must not depend on the batch it is in (prefill in
  // batches must reproduce one-token decode exactly), for narrow rows and for
  // wide ones (float rows with a tail of 4 values past the last vector) in
  // several token tiles.
  const auto [type, isa] = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << "this CPU lacks " << isa_name(isa);
  IsaGuard guard(isa);
  std::mt19937 rng(31 + static_cast<int>(type));
  const int64_t narrow = info(type).quantized ? 2 * info(type).block_size : 80;
  const int64_t wide = info(type).quantized ? 9 * info(type).block_size : 2100;
  for (const auto [rows, cols, n] : {std::array<int64_t, 3>{40, narrow, 11}, std::array<int64_t, 3>{13, wide, 33}}) {
    SCOPED_TRACE(cat(rows, "x", cols, " tokens ", n));
    const auto wbytes = random_weights(type, rows, cols, rng);
    std::vector<float> x(n * cols);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto& v : x) v = nd(rng);
    ThreadPool pool(2);
    const MatmulWeight w = prepare_weight(type, wbytes.data(), rows, cols);
    std::vector<std::byte> ws(matmul_workspace_bytes(w, n, pool.size()));
    std::vector<float> batched(n * rows), single(rows);
    matmul(pool, w, x.data(), n, batched.data(), ws.data());
    for (int64_t t = 0; t < n; ++t) {
      matmul(pool, w, x.data() + t * cols, 1, single.data(), ws.data());
      for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(single[r], batched[t * rows + r]) << "token " << t << " row " << r;
    }
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (TensorType t : kTypes)
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) cases.push_back({t, isa});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTest, testing::ValuesIn(all_cases()), case_name);

TEST(Matmul, LargeShapeAgreesAcrossInstructionSets) {
  // A realistic shape (several row chunks and token chunks) must give the same
  // answer (up to float summation order) on every path.
  std::mt19937 rng(7);
  ThreadPool pool(2);
  for (TensorType type : {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0, TensorType::F16}) {
    const int64_t rows = 300, cols = 1024, n = 70;
    const auto wbytes = random_weights(type, rows, cols, rng);
    std::vector<float> x(n * cols);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto& v : x) v = nd(rng);
    std::vector<float> reference;
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
      if (!isa_supported(isa)) continue;
      IsaGuard guard(isa);
      const MatmulWeight w = prepare_weight(type, wbytes.data(), rows, cols);
      std::vector<std::byte> ws(matmul_workspace_bytes(w, n, pool.size()));
      std::vector<float> y(n * rows);
      matmul(pool, w, x.data(), n, y.data(), ws.data());
      if (reference.empty()) {
        reference = y;
        continue;
      }
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], reference[i], 1e-4 * (1 + std::fabs(reference[i])))
            << type_name(type) << " " << isa_name(isa) << " output " << i;
    }
  }
}

// F16 and BF16 rows are packed by rows and every output is one chain of
// multiply-adds over k in order (kernels_packed_half.cpp), so the AVX2 and
// AVX-512 kernels give the same bits, at row counts that leave part of the
// last group of either width empty, and token counts that use every tile.
TEST(Matmul, HalfPrecisionWeightsGiveTheSameBitsOnAvx2AndAvx512) {
  if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "this CPU lacks AVX-512";
  std::mt19937 rng(17);
  ThreadPool pool(2);
  for (TensorType type : {TensorType::F16, TensorType::BF16}) {
    for (const auto [rows, cols, n] : {std::array<int64_t, 3>{37, 100, 1}, std::array<int64_t, 3>{37, 100, 2},
                                       std::array<int64_t, 3>{75, 333, 29}, std::array<int64_t, 3>{200, 64, 70}}) {
      SCOPED_TRACE(cat(type_name(type), " ", rows, "x", cols, " tokens ", n));
      const auto wbytes = random_weights(type, rows, cols, rng);
      std::vector<float> x(n * cols);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      for (auto& v : x) v = nd(rng);
      std::vector<float> y[2];
      for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
        IsaGuard guard(isa);
        const MatmulWeight w = prepare_weight(type, wbytes.data(), rows, cols);
        ASSERT_TRUE(w.packed) << isa_name(isa);
        std::vector<std::byte> ws(matmul_workspace_bytes(w, n, pool.size()));
        y[isa == Isa::Avx512].resize(n * rows);
        matmul(pool, w, x.data(), n, y[isa == Isa::Avx512].data(), ws.data());
      }
      for (size_t i = 0; i < y[0].size(); ++i) ASSERT_EQ(y[0][i], y[1][i]) << "output " << i;
    }
  }
}

TEST(Matmul, ActivationQuantizationIsIdenticalOnEveryPath) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> x(1024);
  for (auto& v : x) v = nd(rng);
  x[5] = 0.0f;
  std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // an all-zero block
  std::vector<ActBlock32> a32(32), b32(32);
  std::vector<ActBlockK> ak(4), bk(4);
  quantize_act32(Isa::Scalar, x.data(), 1024, a32.data());
  quantize_actk(Isa::Scalar, x.data(), 1024, ak.data());
  for (int b = 0; b < 32; ++b) {
    // q from the unrounded d = amax / 127; d and s kept at half precision, as llama.cpp's Q8_0/Q8_1.
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[32 * b + i]));
    const float d = amax / 127.0f;
    EXPECT_EQ(a32[b].d, fp16_to_fp32(fp32_to_fp16(d))) << b;
    int sum = 0;
    for (int i = 0; i < 32; ++i) {
      sum += a32[b].qs[i];
      EXPECT_NEAR(d * a32[b].qs[i], x[32 * b + i], d * 0.5f + 1e-7f);
    }
    EXPECT_EQ(a32[b].sum, sum);
    EXPECT_EQ(a32[b].s, fp16_to_fp32(fp32_to_fp16(d * static_cast<float>(sum)))) << b;
  }
  for (int b = 0; b < 4; ++b)
    for (int s = 0; s < 16; ++s) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += ak[b].qs[16 * s + i];
      EXPECT_EQ(ak[b].bsum16[s], sum);
    }
  EXPECT_EQ(ak[1].d, 0.0f);
  for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (!isa_supported(isa)) continue;
    quantize_act32(isa, x.data(), 1024, b32.data());
    quantize_actk(isa, x.data(), 1024, bk.data());
    EXPECT_EQ(std::memcmp(a32.data(), b32.data(), sizeof(ActBlock32) * 32), 0) << isa_name(isa);
    EXPECT_EQ(std::memcmp(ak.data(), bk.data(), sizeof(ActBlockK) * 4), 0) << isa_name(isa);
  }
}

// matmul_many gives each product exactly what matmul gives, when the weights
// mix activation forms (k-quant super-blocks, 32-value blocks, float) and
// sizes, on every instruction set, for decode and batched rows.
TEST(Matmul, ManyProductsOfOneActivationMatchSeparateProducts) {
  std::mt19937 rng(77);
  const int64_t cols = 512;
  const std::vector<std::pair<TensorType, int64_t>> shapes = {
      {TensorType::Q4_K, 96}, {TensorType::Q8_0, 40}, {TensorType::F16, 24}, {TensorType::Q6_K, 16}};
  std::vector<std::vector<uint8_t>> data;
  std::vector<MatmulWeight> weights;
  for (const auto& [type, rows] : shapes) data.push_back(random_weights(type, rows, cols, rng));
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (!isa_supported(isa)) continue;
    IsaGuard guard(isa);
    weights.clear();
    for (size_t i = 0; i < shapes.size(); ++i)
      weights.push_back(prepare_weight(shapes[i].first, data[i].data(), shapes[i].second, cols));
    std::vector<const MatmulWeight*> ptrs;
    for (const auto& w : weights) ptrs.push_back(&w);
    for (int64_t n : {1, 9}) {
      std::vector<float> x(n * cols);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      for (auto& v : x) v = nd(rng);
      ThreadPool pool(2);
      std::vector<std::byte> ws(matmul_workspace_bytes(ptrs, n, pool.size()));
      std::vector<std::vector<float>> together(weights.size()), apart(weights.size());
      std::vector<MatmulOutput> outputs;
      for (size_t i = 0; i < weights.size(); ++i) {
        together[i].resize(n * weights[i].rows);
        apart[i].resize(n * weights[i].rows);
        outputs.push_back({&weights[i], together[i].data()});
      }
      matmul_many(pool, outputs, x.data(), n, ws.data());
      for (size_t i = 0; i < weights.size(); ++i) {
        std::vector<std::byte> ws1(matmul_workspace_bytes(weights[i], n, pool.size()));
        matmul(pool, weights[i], x.data(), n, apart[i].data(), ws1.data());
        ASSERT_EQ(together[i], apart[i]) << isa_name(isa) << " " << type_name(shapes[i].first) << " n=" << n;
      }
    }
  }
  std::vector<MatmulOutput> too_many(5, {&weights[0], nullptr});
  std::vector<std::byte> ws(1 << 16);
  ThreadPool pool(1);
  std::vector<float> x(cols);
  EXPECT_THROW(matmul_many(pool, too_many, x.data(), 1, ws.data()), Error);
}

TEST(Matmul, RejectsBadInput) {
  std::vector<uint8_t> data(4096);
  EXPECT_FALSE(matmul_supported(TensorType::IQ2_XXS));
  EXPECT_TRUE(matmul_supported(TensorType::Q4_K));
  EXPECT_THROW(prepare_weight(TensorType::IQ2_XXS, data.data(), 1, 256), Error);
  EXPECT_THROW(prepare_weight(TensorType::Q4_K, data.data(), 1, 100), Error);   // not whole blocks
  EXPECT_THROW(prepare_weight(TensorType::Q8_0, data.data(), 0, 32), Error);    // no rows
  EXPECT_THROW(prepare_weight(TensorType::Q8_0, nullptr, 1, 32), Error);
  const MatmulWeight w = prepare_weight(TensorType::Q8_0, data.data(), 2, 32);
  ThreadPool pool(2);
  std::vector<float> x(32), y(2);
  EXPECT_THROW(matmul(pool, w, x.data(), 1, y.data(), nullptr), Error);  // quantized needs a workspace
  std::vector<std::byte> ws(matmul_workspace_bytes(w, 1, 2));
  EXPECT_THROW(matmul(pool, w, x.data(), 1, y.data(), ws.data(), {16, 0}), Error);  // stride < row
  EXPECT_NO_THROW(matmul(pool, w, x.data(), 0, y.data(), ws.data()));
}

TEST(CpuFeatures, ScalarAlwaysAvailableAndNamesRoundTrip) {
  EXPECT_TRUE(isa_supported(Isa::Scalar));
  EXPECT_TRUE(isa_supported(best_isa()));
  EXPECT_EQ(isa_name(Isa::Avx512), "avx512");
  const Isa before = active_isa();
  set_active_isa(Isa::Scalar);
  EXPECT_EQ(active_isa(), Isa::Scalar);
  set_active_isa(before);
}

}  // namespace
}  // namespace rayo::cpu
