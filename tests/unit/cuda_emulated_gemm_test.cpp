// The tensor-core GEMMs (gemm.cu, gemm_swiglu.cu, gemm_qkv_rope_store.cu) run
// through the SIMT emulator (its mma.sync twin, tests/support/simt), for every
// quantized format, against float64 references on the same inputs as the
// GEMVs': the dequantized weights times the dequantized q8 twin of the input.
// The GEMMs round both to f16 before the tensor cores multiply them (at most
// 2^-11 of each factor), which the tolerances allow; the twins they write for
// the next matmul must be the reference quantization of their outputs, byte
// for byte.
#include <gtest/gtest.h>

#include "support/simt/simt.h"
#include "backends/cuda/kernel_specs.h"
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/gemm.cuh"
#include "backends/cuda/kernels/gemv.cuh"
#include "cuda_emulated_gemm_variants.inc"

#include "backends/cpu/ops.h"
#include "common/half.h"
#include "common/strings.h"
#include "support/simt/kernel_test_util.h"
#include "support/simt/q8_reference.h"
#include "support/simt/qkv_check.h"
#include "support/simt/spec_launch.h"

namespace rayo::cuda {
namespace {

using test::kF32Eps;

// Each product rounds its two factors to f16 (2^-11 each) and the sum adds
// float roundings along a path of K/16 tensor-core steps.
double gemm_tolerance(int64_t k, double abs_sum) {
  return (2.0 / 2048 + (static_cast<double>(k) / 16 + 16) * kF32Eps) * abs_sum + 1e-30;
}
// The int8 tile's products are exact (int8 lanes of the weights and of the
// twin the reference takes too): only the float combines and sums round.
double int8_tolerance(int64_t k, double abs_sum) { return ((static_cast<double>(k) / 16 + 16) * kF32Eps) * abs_sum + 1e-30; }

using GemmKernel = void (*)(MatmulArgs);

struct GemmCase {
  TensorType type;
  int64_t cols, rows, tokens;
  bool norm = false;
  float eps = 0.0f;
  int epi = 0;
  bool emit = false;  // the twin of y * y_norm_w, with statistics
  float x_scale = 1.0f;  // inputs uniform in [-x_scale, x_scale]
  GemmTile tile = GemmTile::F16;
  bool half_blocks = false;  // blocks of one half (GEMM_BLOCK_TOKENS 32, RAYO_GEMM_BLOCK_TOKENS)
};

// With `gemv`, the decode kernel of the same macros runs on the same inputs
// too, and the GEMM's outputs must be the GEMV's within the GEMM's tolerance.
void check_gemm(const GemmCase& c, GemmKernel kernel, uint32_t seed, GemmKernel gemv = nullptr) {
  SCOPED_TRACE(cat(type_name(c.type), " K=", c.cols, " M=", c.rows, " tokens=", c.tokens, " norm=", c.norm,
                   " epi=", c.epi, " x_scale=", c.x_scale, c.tile == GemmTile::Int8 ? " int8" : " f16"));
  const int64_t K = c.cols, M = c.rows, T = c.tokens;
  const auto w = test::random_weights(c.type, M, K, seed);
  const auto wf = test::dequantized(c.type, w, M, K);
  const bool quantized = c.type != TensorType::F16;  // F16 rows are read as stored, with the f32 input
  const auto wg = quantized ? test::gpu_matrix(c.type, w, M, K) : w;
  const auto x = test::random_floats(T * K, seed + 1, c.x_scale), nw = test::random_floats(K, seed + 2);
  const auto twin = test::q8_twin(x.data(), T, K, c.norm ? nw.data() : nullptr);
  const auto epi = test::random_floats(T * M, seed + 3), y_norm_w = test::random_floats(M, seed + 4);
  std::vector<float> y((T + 2) * M, -12345.0f), y_gemv(T * M, -12345.0f);
  std::vector<int8_t> yq(T * M);
  std::vector<test::TwinDs> yds(T * M / 32 + 1);
  std::vector<float> yss(T * ((M + 31) / 32));
  const int n = static_cast<int>(T);
  const TwinIn xt{twin.q.data(), reinterpret_cast<const float2*>(twin.ds.data()), twin.ss.data()};
  const KernelSpec spec = gemv_spec(c.type, K, M, 4, c.norm ? c.eps : -1.0f, c.epi, Emit{c.emit, c.emit, c.emit});
  KernelSpec tc = tensor_core_variant(spec, c.tile);
  if (c.half_blocks) tc.token_tile = kGemmTokens;  // the variant's GEMM_BLOCK_TOKENS
  // Launched for a graph of a token tile more than the step: those blocks must return.
  test::launch(tc, T + tc.token_tile, kernel,
               MatmulArgs{wg.data(), x.data(), xt, nw.data(), y.data(), epi.data(),
                          {yq.data(), reinterpret_cast<float2*>(yds.data()), yss.data()}, y_norm_w.data(), &n});
  if (gemv) {
    std::vector<int8_t> gq(T * M);
    std::vector<test::TwinDs> gds(T * M / 32 + 1);
    std::vector<float> gss(T * ((M + 31) / 32));
    test::launch(spec, T, gemv,
                 MatmulArgs{wg.data(), x.data(), xt, nw.data(), y_gemv.data(), epi.data(),
                            {gq.data(), reinterpret_cast<float2*>(gds.data()), gss.data()}, y_norm_w.data(), &n});
  }
  for (int64_t t = 0; t < T; ++t) {
    const auto xs = test::matmul_input(x, nw, twin, t, K, quantized, c.norm, c.eps);
    for (int64_t r = 0; r < M; ++r) {
      double ref = 0, abs_sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        ref += static_cast<double>(wf[r * K + k]) * xs[k];
        abs_sum += std::abs(static_cast<double>(wf[r * K + k]) * xs[k]);
      }
      const double add = c.epi == 1 ? epi[t * M + r] : c.epi == 2 ? epi[r] : 0.0;
      const double tol = (c.tile == GemmTile::Int8 ? int8_tolerance(K, abs_sum) : gemm_tolerance(K, abs_sum)) +
                         4 * kF32Eps * std::abs(add);
      ASSERT_NEAR(y[t * M + r], ref + add, tol) << "token " << t << " row " << r;
      // The GEMV's own error (float sums, checked in cuda_emulated_gemv_test.cpp) adds to the GEMM's.
      if (gemv) {
        ASSERT_NEAR(y[t * M + r], y_gemv[t * M + r], tol + static_cast<double>(K) * kF32Eps * abs_sum)
            << "prefill and decode differ at token " << t << " row " << r;
      }
    }
  }
  for (int64_t i = T * M; i < (T + 2) * M; ++i) ASSERT_EQ(y[i], -12345.0f) << "row past the step written: " << i;
  if (c.emit) {
    const std::vector<float> y_step(y.begin(), y.begin() + T * M);
    const auto ref = test::q8_twin(y_step.data(), T, M, y_norm_w.data());
    for (int64_t i = 0; i < T * M; ++i) ASSERT_EQ(yq[i], ref.q[i]) << "q " << i;
    for (int64_t i = 0; i < T * M / 32; ++i) ASSERT_EQ(yds[i].x, ref.ds[i].x) << "d " << i;
    for (size_t i = 0; i < ref.ss.size(); ++i) ASSERT_NEAR(yss[i], ref.ss[i], 40 * kF32Eps * ref.ss[i]) << "ss " << i;
  }
}

// Two row tiles (the second partial), two chunks of K, and one token block
// more launched than needed. The f16 tile's blocks take two halves of 32
// tokens: 37 tokens are a full half and a partial one; 70 (Q4_0, Q8_0, Q4_K)
// a full block and a partial one.
TEST(CudaEmulatedGemm, EveryQuantizedFormatMatchesTheDequantizedProduct) {
  check_gemm({TensorType::Q4_0, 512, 96, 70}, gemm_q4_0::gemm, 1);
  check_gemm({TensorType::Q4_1, 512, 96, 37}, gemm_q4_1::gemm, 2);
  check_gemm({TensorType::Q5_0, 512, 96, 37}, gemm_q5_0::gemm, 3);
  check_gemm({TensorType::Q5_1, 512, 96, 37}, gemm_q5_1::gemm, 4);
  check_gemm({TensorType::Q8_0, 512, 96, 70}, gemm_q8_0::gemm, 5);
  check_gemm({TensorType::Q2_K, 512, 96, 37}, gemm_q2_k::gemm, 6);
  check_gemm({TensorType::Q3_K, 512, 96, 37}, gemm_q3_k::gemm, 7);
  check_gemm({TensorType::Q4_K, 512, 96, 70}, gemm_q4_k::gemm, 8);
  check_gemm({TensorType::Q5_K, 512, 96, 37}, gemm_q5_k::gemm, 9);
  check_gemm({TensorType::Q6_K, 512, 96, 37}, gemm_q6_k::gemm, 10);
  check_gemm({TensorType::IQ4_NL, 512, 96, 37}, gemm_iq4_nl::gemm, 11);
  check_gemm({TensorType::IQ4_XS, 512, 96, 37}, gemm_iq4_xs::gemm, 12);
}

// The f16 tile's weights (unit_halves: int8 lanes, lane_exact, one FMA per
// value) are the reference dequantizer's values rounded once to f16, at the
// places Gpu<FMT>::offset names, for every unit of every row: each format's
// affine and offsets, and the lanes' exact conversion (signed and unsigned).
template <int FMT, long long M, int K>
void check_unit_halves(TensorType type, uint32_t seed) {
  SCOPED_TRACE(type_name(type));
  using F = Gpu<FMT>;
  const auto w = test::random_weights(type, M, K, seed);
  const auto ref = test::dequantized(type, w, M, K);
  const auto wg = test::gpu_matrix(type, w, M, K);
  const GlobalPlanes<FMT, M, K> g{wg.data()};
  constexpr int kPerChunk = GEMM_K / F::kUnit;
  for (long long r = 0; r < M; ++r)
    for (int u = 0; u < K / F::kUnit; ++u) {
      uint4 pieces[F::kUnit / 8];
      unit_halves<FMT>(F::read(g, unit_block<FMT, K>(r, u), unit_in_block<FMT>(u)), pieces);
      for (int i = 0; i < F::kUnit; ++i) {
        const uint4& p = pieces[i / 8];
        const uint32_t word = (i % 8) / 2 == 0 ? p.x : (i % 8) / 2 == 1 ? p.y : (i % 8) / 2 == 2 ? p.z : p.w;
        const float got = fp16_to_fp32(static_cast<uint16_t>(word >> (16 * (i % 2))));
        const long long k = static_cast<long long>(u / kPerChunk) * GEMM_K + F::offset(u % kPerChunk, i);
        const float want = ref[r * K + k];
        // One f16 rounding of the exact value, which the reference's float
        // arithmetic may differ from by an ulp of float.
        ASSERT_NEAR(got, want, std::abs(want) / 2048 + 6e-8) << "row " << r << " unit " << u << " value " << i;
      }
    }
}

TEST(CudaEmulatedGemm, UnitHalvesAreTheDequantizedValuesInF16) {
  check_unit_halves<FMT_Q4_0, 5, 512>(TensorType::Q4_0, 51);
  check_unit_halves<FMT_Q4_1, 5, 512>(TensorType::Q4_1, 52);
  check_unit_halves<FMT_Q5_0, 5, 512>(TensorType::Q5_0, 53);
  check_unit_halves<FMT_Q5_1, 5, 512>(TensorType::Q5_1, 54);
  check_unit_halves<FMT_Q8_0, 5, 512>(TensorType::Q8_0, 55);
  check_unit_halves<FMT_Q2_K, 5, 512>(TensorType::Q2_K, 56);
  check_unit_halves<FMT_Q3_K, 5, 512>(TensorType::Q3_K, 57);
  check_unit_halves<FMT_Q4_K, 5, 512>(TensorType::Q4_K, 58);
  check_unit_halves<FMT_Q5_K, 5, 512>(TensorType::Q5_K, 59);
  check_unit_halves<FMT_Q6_K, 5, 512>(TensorType::Q6_K, 60);
  check_unit_halves<FMT_IQ4_NL, 5, 512>(TensorType::IQ4_NL, 61);
  check_unit_halves<FMT_IQ4_XS, 5, 512>(TensorType::IQ4_XS, 62);
}

// F16 weights as stored (gemm.cuh's gemm_tile_half_rows) times the f32 input:
// Whisper's first convolution (K = 240, a chunk partly inside the rows) with
// its bias, and a residual with the next matmul's twin over two chunks, each
// against the GEMV of the same macros.
TEST(CudaEmulatedGemm, F16RowsMatchTheProductAndTheGemv) {
  check_gemm({TensorType::F16, 240, 96, 37, false, 0.0f, 2}, gemm_f16_k240_bias::gemm, 31, gemv_f16_k240_bias::gemv);
  check_gemm({TensorType::F16, 512, 160, 33, false, 0.0f, 1, true}, gemm_f16_res_emit::gemm, 32,
             gemv_f16_res_emit::gemv);
}

TEST(CudaEmulatedGemm, NormResidualBiasAPartialChunkAndTheNextTwin) {
  check_gemm({TensorType::Q4_K, 768, 64, 20, true, 1e-5f}, gemm_norm_q4_k::gemm, 21);
  check_gemm({TensorType::Q6_K, 256, 128, 33, false, 0.0f, 1, true}, gemm_res_emit_q6_k::gemm, 22);
  // K = 96: a chunk of 256 values only partly inside the row.
  check_gemm({TensorType::Q8_0, 96, 40, 5, true, 1e-6f, 2}, gemm_bias_q8_0_k96::gemm, 23);
  check_gemm({TensorType::IQ4_XS, 768, 64, 20, true, 1e-5f, 1, true}, gemm_norm_res_emit_iq4_xs::gemm, 24);
  check_gemm({TensorType::IQ4_NL, 96, 40, 5, true, 1e-6f, 2}, gemm_bias_iq4_nl_k96::gemm, 25);
}

// Gate Q4_K and up of type `up` (the variant's), inputs in [-x_scale, x_scale],
// on the given tile.
using SwigluKernel = void (*)(GateUpArgs);
void check_swiglu(TensorType up, SwigluKernel kernel, GemmTile tile, float x_scale) {
  SCOPED_TRACE(cat(type_name(up), " x_scale=", x_scale));
  const int64_t K = 512, M = 64, T = 40;
  const auto wg = test::random_weights(TensorType::Q4_K, M, K, 31), wu = test::random_weights(up, M, K, 32);
  const auto gf = test::dequantized(TensorType::Q4_K, wg, M, K), uf = test::dequantized(up, wu, M, K);
  const auto gg = test::gpu_matrix(TensorType::Q4_K, wg, M, K), ug = test::gpu_matrix(up, wu, M, K);
  const auto x = test::random_floats(T * K, 33, x_scale), nw = test::random_floats(K, 34);
  const auto twin = test::q8_twin(x.data(), T, K, nw.data());
  std::vector<float> y(T * M);
  std::vector<int8_t> yq(T * M);
  std::vector<test::TwinDs> yds(T * M / 32);
  std::vector<float> yss(T * M / 32);
  const int n = static_cast<int>(T);
  const KernelSpec spec = gemv_swiglu_spec(TensorType::Q4_K, up, K, M, 4, 1e-5f, Emit{true, false, false});
  auto tolerance = tile == GemmTile::Int8 ? int8_tolerance : gemm_tolerance;
  test::launch(tensor_core_variant(spec, tile), T, kernel,
               GateUpArgs{gg.data(), ug.data(), x.data(),
                          {twin.q.data(), reinterpret_cast<const float2*>(twin.ds.data()), twin.ss.data()}, nw.data(),
                          y.data(), {yq.data(), reinterpret_cast<float2*>(yds.data()), yss.data()}, &n});
  for (int64_t t = 0; t < T; ++t) {
    const auto xs = test::matmul_input(x, nw, twin, t, K, true, true, 1e-5f);
    for (int64_t r = 0; r < M; ++r) {
      double g = 0, u = 0, ga = 0, ua = 0;
      for (int64_t k = 0; k < K; ++k) {
        g += gf[r * K + k] * xs[k], u += uf[r * K + k] * xs[k];
        ga += std::abs(gf[r * K + k] * xs[k]), ua += std::abs(uf[r * K + k] * xs[k]);
      }
      const double ref = g / (1.0 + std::exp(-g)) * u;
      const double tol = 1.1 * tolerance(K, ga) * std::abs(u) + tolerance(K, ua) * std::abs(g) +
                         8 * kF32Eps * std::abs(ref);
      ASSERT_NEAR(y[t * M + r], ref, tol) << "token " << t << " row " << r;
    }
  }
  const auto ref = test::q8_twin(y.data(), T, M);
  for (int64_t i = 0; i < T * M; ++i) ASSERT_EQ(yq[i], ref.q[i]) << "q " << i;
}

TEST(CudaEmulatedGemm, GateUpGluWithMixedFormats) {
  check_swiglu(TensorType::Q6_K, gemm_swiglu_q4_k_q6_k::gemm_swiglu, GemmTile::F16, 1.0f);
}

// The fused attention input, checked as on CUDA cores (qkv_check.h) with the
// GEMM's tolerance: 40 tokens, positions 0..39 of one sequence in 4 blocks of
// 16 (scrambled); tiles of 32 tokens x 32 pairs.
using QkvKernel = void (*)(QkvArgs);

void check_qkv(const test::QkvCase& c, QkvKernel kernel, uint32_t seed, GemmTile tile = GemmTile::F16) {
  test::QkvTokens tokens{std::vector<int>(40), std::vector<int>(40, 0), {2, 0, 3, 1}, 4};
  for (int t = 0; t < 40; ++t) tokens.positions[t] = t;
  auto run = [&](const test::QkvBuffers& b) {
    test::launch(tensor_core_variant(qkv_rope_store_spec(b.shape, 4), tile), b.rows, kernel, b.args);
  };
  test::check_qkv(c, tokens, seed, run, tile == GemmTile::Int8 ? int8_tolerance : gemm_tolerance);
}

// A llama-style QKV (Q4_K_M's formats, llama3's RoPE base, fused norm) at small widths.
test::QkvCase llama_qkv_case() {
  test::QkvCase llama{TensorType::Q4_K, TensorType::Q4_K, TensorType::Q6_K, 256, 8, 2, 64};
  llama.rope.n_rot = 64;
  llama.rope.freq_base = 500000.0f;
  llama.rope.freq_factors = 0;
  llama.ff = true;
  llama.norm = true;
  llama.eps = 1e-5f;
  return llama;
}

TEST(CudaEmulatedGemm, QkvRopeStoreMatchesMatMulBiasRopeAndStore) {
  check_qkv(llama_qkv_case(), gemm_qkv_llama::gemm_qkv_rope_store, 41);
  // 4 + 2 heads of 32: 96 pairs, tiles of 32 straddling q, k and v.
  test::QkvCase qwen2{TensorType::Q8_0, TensorType::Q8_0, TensorType::Q8_0, 128, 4, 1, 32};
  qwen2.rope.type = graph::RopeType::NeoX;
  qwen2.rope.n_rot = 32;
  qwen2.rope.freq_base = 1e6f;
  qwen2.bias = true;
  qwen2.norm = true;
  qwen2.eps = 1e-6f;
  check_qkv(qwen2, gemm_qkv_qwen2::gemm_qkv_rope_store, 42);
}

// A deep model's residual stream grows far past f16's 65 504 (rows of rms
// about 2e6 here) while its norms bring each row back to about 1: the f16
// token tile must hold x * norm_w / rms, not x * norm_w, which would become
// inf and then NaN, so that prefill gives what decode gives.
TEST(CudaEmulatedGemm, HugeResidualsThroughAFusedNormGiveWhatDecodeGives) {
  constexpr float kHuge = 4e6f;
  GemmCase norm{TensorType::Q4_K, 768, 64, 20, true, 1e-5f};
  norm.x_scale = kHuge;
  check_gemm(norm, gemm_norm_q4_k::gemm, 51, gemv_norm_q4_k::gemv);
  GemmCase norm_res_emit{TensorType::IQ4_XS, 768, 64, 20, true, 1e-5f, 1, true};
  norm_res_emit.x_scale = kHuge;
  check_gemm(norm_res_emit, gemm_norm_res_emit_iq4_xs::gemm, 52);
  check_swiglu(TensorType::Q6_K, gemm_swiglu_q4_k_q6_k::gemm_swiglu, GemmTile::F16, kHuge);
  test::QkvCase llama = llama_qkv_case();
  llama.x_scale = kHuge;
  check_qkv(llama, gemm_qkv_llama::gemm_qkv_rope_store, 53);
}

// The int8 tile (GEMM_EXACT 2): every format, with the float error alone as
// its tolerance (its int8 products are exact), against the same float64
// references; with a norm, residual, bias, a partial chunk, the next twin and
// huge residuals; gate/up of one unit shape and two formats; q, k and v.
GemmCase on_int8(GemmCase c) {
  c.tile = GemmTile::Int8;
  return c;
}

TEST(CudaEmulatedGemm, Int8TileMatchesTheProductForEveryFormat) {
  // 70 tokens: a full block of two halves and a partial one.
  check_gemm(on_int8({TensorType::Q4_0, 512, 96, 70}), int8_q4_0::gemm, 1);
  check_gemm(on_int8({TensorType::Q4_1, 512, 96, 37}), int8_q4_1::gemm, 2);
  check_gemm(on_int8({TensorType::Q5_0, 512, 96, 37}), int8_q5_0::gemm, 3);
  check_gemm(on_int8({TensorType::Q5_1, 512, 96, 37}), int8_q5_1::gemm, 4);
  check_gemm(on_int8({TensorType::Q8_0, 512, 96, 37}), int8_q8_0::gemm, 5);
  check_gemm(on_int8({TensorType::Q2_K, 512, 96, 37}), int8_q2_k::gemm, 6);
  check_gemm(on_int8({TensorType::Q3_K, 512, 96, 37}), int8_q3_k::gemm, 7);
  check_gemm(on_int8({TensorType::Q4_K, 512, 96, 37}), int8_q4_k::gemm, 8);
  check_gemm(on_int8({TensorType::Q5_K, 512, 96, 37}), int8_q5_k::gemm, 9);
  check_gemm(on_int8({TensorType::Q6_K, 512, 96, 70}), int8_q6_k::gemm, 10);
  check_gemm(on_int8({TensorType::IQ4_NL, 512, 96, 37}), int8_iq4_nl::gemm, 11);
  check_gemm(on_int8({TensorType::IQ4_XS, 512, 96, 37}), int8_iq4_xs::gemm, 12);
}

// Blocks of one half of 32 tokens (RAYO_GEMM_BLOCK_TOKENS=32), on both tiles:
// 70 tokens in three blocks, the last partial, with a norm and the residual
// and the next twin.
TEST(CudaEmulatedGemm, BlocksOfOneHalf) {
  GemmCase f16{TensorType::Q4_K, 512, 96, 70, true, 1e-5f, 1, true};
  f16.half_blocks = true;
  check_gemm(f16, gemm_half_q4_k::gemm, 61);
  GemmCase int8 = on_int8({TensorType::Q6_K, 512, 96, 70, true, 1e-5f, 1, true});
  int8.half_blocks = true;
  check_gemm(int8, int8_half_q6_k::gemm, 62);
}

TEST(CudaEmulatedGemm, Int8TileWithNormResidualBiasTwinsGateUpAndQkv) {
  check_gemm(on_int8({TensorType::Q4_K, 768, 64, 20, true, 1e-5f}), int8_norm_q4_k::gemm, 21, gemv_norm_q4_k::gemv);
  check_gemm(on_int8({TensorType::Q6_K, 256, 128, 33, false, 0.0f, 1, true}), int8_res_emit_q6_k::gemm, 22);
  check_gemm(on_int8({TensorType::Q8_0, 96, 40, 5, true, 1e-6f, 2}), int8_bias_q8_0_k96::gemm, 23);
  GemmCase huge = on_int8({TensorType::IQ4_XS, 768, 64, 20, true, 1e-5f, 1, true});
  huge.x_scale = 4e6f;
  check_gemm(huge, int8_norm_res_emit_iq4_xs::gemm, 24);
  check_swiglu(TensorType::Q5_K, int8_swiglu_q4_k_q5_k::gemm_swiglu, GemmTile::Int8, 1.0f);
  check_qkv(llama_qkv_case(), int8_qkv_llama::gemm_qkv_rope_store, 25, GemmTile::Int8);
}

}  // namespace
}  // namespace rayo::cuda
