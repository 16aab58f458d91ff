// The GEMV-family kernels (gemv.cu, gemv_swiglu.cu) and the row decoders
// (dequant.cu) run through the SIMT emulator, against the reference
// dequantizer and float64 dot products, for every weight format.
#include <gtest/gtest.h>

#include "support/simt/simt.h"
// Shape-independent kernel headers at global scope, before the namespaced
// kernel variants (their include guards keep them there).
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/gemv.cuh"
#include "cuda_emulated_gemv_variants.inc"

#include "backends/cpu/ops.h"
#include "common/strings.h"
#include "support/simt/kernel_test_util.h"

namespace rayo::cuda {
namespace {

using test::kF32Eps;

// A float sum of n terms accumulated in float has error at most about
// (additions on the longest path) * u * sum|terms| (first order). A lane adds
// K/256 groups of 8 products in sequence (K/32 additions), then 5 shuffle
// levels; a fused norm adds the block's sum of squares (K/128 + 8 levels) and
// a sqrt and divide, which scale every term by the same relative error.
double gemv_tolerance(int64_t k, double abs_sum, bool norm) {
  const double path = static_cast<double>(k) / 32 + 8 + (norm ? static_cast<double>(k) / 128 + 16 : 0);
  return path * kF32Eps * abs_sum + 1e-30;
}

struct GemvCase {
  TensorType type;
  int64_t cols, rows, tokens;
  bool norm = false;
  float eps = 0.0f;
  int epi = 0;
};

// Runs `launch(w, x, y, norm_w, epi, n_rows)` and checks y against float64.
template <typename Launch>
void check_gemv(const GemvCase& c, Launch launch, uint32_t seed) {
  SCOPED_TRACE(cat(type_name(c.type), " K=", c.cols, " M=", c.rows, " tokens=", c.tokens, " norm=", c.norm,
                   " epi=", c.epi));
  const auto w = test::random_weights(c.type, c.rows, c.cols, seed);
  const auto wf = test::dequantized(c.type, w, c.rows, c.cols);
  const auto x = test::random_floats(c.tokens * c.cols, seed + 1);
  const auto nw = test::random_floats(c.cols, seed + 2);
  const auto epi = test::random_floats(c.tokens * c.rows, seed + 3);
  std::vector<float> y(c.tokens * c.rows, -12345.0f);
  const int n_rows = static_cast<int>(c.tokens);
  launch(w.data(), x.data(), y.data(), nw.data(), epi.data(), &n_rows);
  std::vector<float> xn(c.cols);
  for (int64_t t = 0; t < c.tokens; ++t) {
    const float* xt = x.data() + t * c.cols;
    if (c.norm) {
      cpu::rms_norm_row(xt, nw.data(), xn.data(), c.cols, static_cast<int>(c.cols), c.eps);
      xt = xn.data();
    }
    for (int64_t r = 0; r < c.rows; ++r) {
      double ref = 0, abs_sum = 0;
      for (int64_t k = 0; k < c.cols; ++k) {
        ref += static_cast<double>(wf[r * c.cols + k]) * xt[k];
        abs_sum += std::abs(static_cast<double>(wf[r * c.cols + k]) * xt[k]);
      }
      if (c.epi == 1) ref += epi[t * c.rows + r], abs_sum += std::abs(epi[t * c.rows + r]);
      if (c.epi == 2) ref += epi[r], abs_sum += std::abs(epi[r]);
      ASSERT_NEAR(y[t * c.rows + r], ref, gemv_tolerance(c.cols, abs_sum, c.norm)) << "token " << t << " row " << r;
    }
  }
}

#define GEMV_LAUNCH(NS, ROWS_, TT_)                                                                          \
  [](const uint8_t* w, const float* x, float* y, const float* nw, const float* epi, const int* n) {          \
    simt::launch(simt::dim3((ROWS_ + 3) / 4, (*n + TT_ - 1) / TT_), simt::dim3(128),                          \
                 [&] { NS::gemv(w, x, y, nw, epi, n); });                                                      \
  }

TEST(CudaEmulatedGemv, EveryFormatMatchesReferenceDequantization) {
  check_gemv({TensorType::F32, 512, 37, 1}, GEMV_LAUNCH(gemv_f32, 37, 1), 1);
  check_gemv({TensorType::F16, 512, 37, 1}, GEMV_LAUNCH(gemv_f16, 37, 1), 2);
  check_gemv({TensorType::BF16, 512, 37, 1}, GEMV_LAUNCH(gemv_bf16, 37, 1), 3);
  check_gemv({TensorType::Q4_0, 512, 37, 1}, GEMV_LAUNCH(gemv_q4_0, 37, 1), 4);
  check_gemv({TensorType::Q4_1, 512, 37, 1}, GEMV_LAUNCH(gemv_q4_1, 37, 1), 5);
  check_gemv({TensorType::Q5_0, 512, 37, 1}, GEMV_LAUNCH(gemv_q5_0, 37, 1), 6);
  check_gemv({TensorType::Q5_1, 512, 37, 1}, GEMV_LAUNCH(gemv_q5_1, 37, 1), 7);
  check_gemv({TensorType::Q8_0, 512, 37, 1}, GEMV_LAUNCH(gemv_q8_0, 37, 1), 8);
  check_gemv({TensorType::Q2_K, 512, 37, 1}, GEMV_LAUNCH(gemv_q2_k, 37, 1), 9);
  check_gemv({TensorType::Q3_K, 512, 37, 1}, GEMV_LAUNCH(gemv_q3_k, 37, 1), 10);
  check_gemv({TensorType::Q4_K, 512, 37, 1}, GEMV_LAUNCH(gemv_q4_k, 37, 1), 11);
  check_gemv({TensorType::Q5_K, 512, 37, 1}, GEMV_LAUNCH(gemv_q5_k, 37, 1), 12);
  check_gemv({TensorType::Q6_K, 512, 37, 1}, GEMV_LAUNCH(gemv_q6_k, 37, 1), 13);
}

TEST(CudaEmulatedGemv, FloatRowsWithATail) {
  check_gemv({TensorType::F32, 172, 19, 1}, GEMV_LAUNCH(gemv_tail_f32, 19, 1), 21);
  check_gemv({TensorType::F16, 172, 19, 1}, GEMV_LAUNCH(gemv_tail_f16, 19, 1), 22);
  check_gemv({TensorType::BF16, 172, 19, 1}, GEMV_LAUNCH(gemv_tail_bf16, 19, 1), 23);
}

TEST(CudaEmulatedGemv, FusedNormResidualAndBiasEpilogues) {
  check_gemv({TensorType::Q4_K, 768, 45, 1, true, 1e-5f, 0}, GEMV_LAUNCH(gemv_norm_q4_k, 45, 1), 31);
  // 7 tokens in tiles of 4: the last tile is partial.
  check_gemv({TensorType::Q6_K, 256, 33, 7, false, 0.0f, 1}, GEMV_LAUNCH(gemv_res_q6_k_tt4, 33, 4), 32);
  check_gemv({TensorType::Q8_0, 96, 21, 5, true, 1e-6f, 2}, GEMV_LAUNCH(gemv_bias_q8_0_tt4, 21, 4), 33);
}

TEST(CudaEmulatedGemv, TokensPastTheStepCountAreNotWritten) {
  // A graph for 8 rows run with 3: rows 3.. keep their contents.
  const int64_t K = 256, M = 33;
  const auto w = test::random_weights(TensorType::Q6_K, M, K, 41);
  const auto x = test::random_floats(8 * K, 42);
  std::vector<float> y(8 * M, 7.0f), res(8 * M, 0.0f);
  const int n = 3;
  simt::launch(simt::dim3((M + 3) / 4, 2), simt::dim3(128),
               [&] { gemv_res_q6_k_tt4::gemv(w.data(), x.data(), y.data(), nullptr, res.data(), &n); });
  for (int64_t i = 3 * M; i < 8 * M; ++i) ASSERT_EQ(y[i], 7.0f) << i;
  for (int64_t i = 0; i < 3 * M; ++i) ASSERT_NE(y[i], 7.0f) << i;
}

template <typename Launch>
void check_swiglu(TensorType gt, TensorType ut, int64_t K, int64_t M, int64_t tokens, bool norm, float eps,
                  Launch launch, uint32_t seed) {
  SCOPED_TRACE(cat(type_name(gt), "/", type_name(ut), " K=", K, " M=", M));
  const auto wg = test::random_weights(gt, M, K, seed), wu = test::random_weights(ut, M, K, seed + 1);
  const auto gf = test::dequantized(gt, wg, M, K), uf = test::dequantized(ut, wu, M, K);
  const auto x = test::random_floats(tokens * K, seed + 2);
  const auto nw = test::random_floats(K, seed + 3);
  std::vector<float> y(tokens * M);
  const int n = static_cast<int>(tokens);
  launch(wg.data(), wu.data(), x.data(), y.data(), nw.data(), &n);
  std::vector<float> xn(K);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* xt = x.data() + t * K;
    if (norm) {
      cpu::rms_norm_row(xt, nw.data(), xn.data(), K, static_cast<int>(K), eps);
      xt = xn.data();
    }
    for (int64_t r = 0; r < M; ++r) {
      double g = 0, u = 0, ga = 0, ua = 0;
      for (int64_t k = 0; k < K; ++k) {
        g += static_cast<double>(gf[r * K + k]) * xt[k];
        u += static_cast<double>(uf[r * K + k]) * xt[k];
        ga += std::abs(static_cast<double>(gf[r * K + k]) * xt[k]);
        ua += std::abs(static_cast<double>(uf[r * K + k]) * xt[k]);
      }
      const double ref = g / (1.0 + std::exp(-g)) * u;
      // silu has slope at most 1.1: the gate's error passes on scaled by |u|,
      // the up's by |silu(g)|; expf and the divide add a few ulps of the result.
      const double tol = 1.1 * gemv_tolerance(K, ga, norm) * std::abs(u) +
                         gemv_tolerance(K, ua, norm) * std::abs(g) + 8 * kF32Eps * std::abs(ref);
      ASSERT_NEAR(y[t * M + r], ref, tol) << "token " << t << " row " << r;
    }
  }
}

TEST(CudaEmulatedGemv, GateUpSwiGLUWithMixedFormats) {
  check_swiglu(TensorType::Q4_K, TensorType::Q6_K, 512, 41, 6, true, 1e-5f,
               [](const uint8_t* g, const uint8_t* u, const float* x, float* y, const float* nw, const int* n) {
                 simt::launch(simt::dim3((41 + 3) / 4, (*n + 3) / 4), simt::dim3(128),
                              [&] { swiglu_q4_k_q6_k::gemv_swiglu(g, u, x, y, nw, n); });
               },
               51);
  check_swiglu(TensorType::F16, TensorType::F16, 72, 13, 1, false, 0.0f,
               [](const uint8_t* g, const uint8_t* u, const float* x, float* y, const float* nw, const int* n) {
                 simt::launch(simt::dim3((13 + 3) / 4, *n), simt::dim3(128),
                              [&] { swiglu_f16::gemv_swiglu(g, u, x, y, nw, n); });
               },
               52);
}

// embed must reproduce the reference dequantizer bit for bit (the emulator
// computes the same float operations in the same order as quant/dequantize.cpp).
template <typename Embed>
void check_embed(TensorType t, int64_t cols, Embed embed, uint32_t seed) {
  SCOPED_TRACE(type_name(t));
  const int64_t vocab = 11;
  const auto w = test::random_weights(t, vocab, cols, seed);
  const auto wf = test::dequantized(t, w, vocab, cols);
  const std::vector<int> tokens = {3, 0, 10, 3, 7};
  const int n = static_cast<int>(tokens.size());
  std::vector<float> y(tokens.size() * cols);
  embed(w.data(), tokens.data(), y.data(), &n);
  for (size_t i = 0; i < tokens.size(); ++i)
    for (int64_t k = 0; k < cols; ++k)
      ASSERT_EQ(y[i * cols + k], wf[tokens[i] * cols + k]) << "token " << tokens[i] << " col " << k;
}

#define EMBED(NS)                                                                                        \
  [](const uint8_t* w, const int* tok, float* y, const int* n) {                                         \
    simt::launch(simt::dim3(*n), simt::dim3(128), [&] { NS::embed(w, tok, y, n); });                      \
  }

TEST(CudaEmulatedDequant, EmbedRowsAreBitExactForEveryFormat) {
  check_embed(TensorType::F32, 512, EMBED(embed_f32), 61);
  check_embed(TensorType::F16, 512, EMBED(embed_f16), 62);
  check_embed(TensorType::BF16, 512, EMBED(embed_bf16), 63);
  check_embed(TensorType::Q4_0, 512, EMBED(embed_q4_0), 64);
  check_embed(TensorType::Q4_1, 512, EMBED(embed_q4_1), 65);
  check_embed(TensorType::Q5_0, 512, EMBED(embed_q5_0), 66);
  check_embed(TensorType::Q5_1, 512, EMBED(embed_q5_1), 67);
  check_embed(TensorType::Q8_0, 512, EMBED(embed_q8_0), 68);
  check_embed(TensorType::Q2_K, 512, EMBED(embed_q2_k), 69);
  check_embed(TensorType::Q3_K, 512, EMBED(embed_q3_k), 70);
  check_embed(TensorType::Q4_K, 512, EMBED(embed_q4_k), 71);
  check_embed(TensorType::Q5_K, 512, EMBED(embed_q5_k), 72);
  check_embed(TensorType::Q6_K, 512, EMBED(embed_q6_k), 73);
  check_embed(TensorType::F32, 172, EMBED(embed_tail_f32), 74);
  check_embed(TensorType::F16, 172, EMBED(embed_tail_f16), 75);
  check_embed(TensorType::BF16, 172, EMBED(embed_tail_bf16), 76);
}

// The fallback formats are dequantized to f16 at load: each value is the
// reference value rounded to half (bit-exact).
template <typename Dequant>
void check_dequant_f16(TensorType t, Dequant dq, uint32_t seed) {
  SCOPED_TRACE(type_name(t));
  const int64_t rows = 9, cols = 512;
  const auto w = test::random_weights(t, rows, cols, seed);
  const auto wf = test::dequantized(t, w, rows, cols);
  std::vector<uint16_t> out(rows * cols);
  dq(w.data(), out.data(), rows);
  for (int64_t i = 0; i < rows * cols; ++i) ASSERT_EQ(out[i], fp32_to_fp16(wf[i])) << i;
}

#define DEQUANT(NS)                                                                                          \
  [](const uint8_t* w, uint16_t* out, long long rows) {                                                      \
    simt::launch(simt::dim3(4), simt::dim3(128), [&] { NS::dequant_f16(w, out, rows); });                     \
  }

TEST(CudaEmulatedDequant, FallbackFormatsToF16) {
  check_dequant_f16(TensorType::Q4_1, DEQUANT(embed_q4_1), 81);
  check_dequant_f16(TensorType::Q5_0, DEQUANT(embed_q5_0), 82);
  check_dequant_f16(TensorType::Q5_1, DEQUANT(embed_q5_1), 83);
  check_dequant_f16(TensorType::Q2_K, DEQUANT(embed_q2_k), 84);
  check_dequant_f16(TensorType::Q3_K, DEQUANT(embed_q3_k), 85);
}

}  // namespace
}  // namespace rayo::cuda
