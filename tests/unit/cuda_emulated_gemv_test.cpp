// The GEMV-family kernels (gemv.cu, gemv_swiglu.cu), the activation quantizer
// (quantize.cu) and the row decoders (dequant.cu) run through the SIMT
// emulator, for every weight format, against float64 references:
//  - quantized weights (in their GPU layout) times the q8 twin of the input:
//    the exact product of the dequantized weights and the dequantized twin,
//    and within the 8-bit rounding of the product with the unquantized input;
//  - float weights times the f32 input;
//  - the twins the kernels write for the next matmul, byte for byte.
#include <gtest/gtest.h>

#include <bit>

#include "support/simt/simt.h"
// Shape-independent kernel headers at global scope, before the namespaced
// kernel variants (their include guards keep them there).
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/gemv.cuh"
#include "cuda_emulated_gemv_variants.inc"

#include "backends/cpu/ops.h"
#include "common/strings.h"
#include "quant/blocks.h"
#include "support/simt/kernel_test_util.h"
#include "support/simt/q8_reference.h"
#include "support/simt/spec_launch.h"

namespace rayo::cuda {
namespace {

using test::kF32Eps;

bool is_float(TensorType t) { return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16; }

// A float sum of n terms accumulated in float has error at most about
// (additions on the longest path) * u * sum|terms| (first order). A lane adds
// K/32 units or groups in sequence, each a few roundings of scales, then 5
// shuffle levels, the 1/rms factor and the epilogue.
double gemv_tolerance(int64_t k, double abs_sum) {
  const double path = static_cast<double>(k) / 32 + 24;
  return path * kF32Eps * abs_sum + 1e-30;
}

using GemvKernel = void (*)(MatmulArgs);

// The input twin and output twin of the tests' buffers as kernel arguments.
TwinIn twin_in(const test::Q8Twin& t) {
  return {t.q.data(), reinterpret_cast<const float2*>(t.ds.data()), t.ss.data()};
}
TwinOut twin_out(std::vector<int8_t>& q, std::vector<test::TwinDs>& ds, std::vector<float>& ss) {
  return {q.data(), reinterpret_cast<float2*>(ds.data()), ss.data()};
}

struct GemvCase {
  TensorType type;
  int64_t cols, rows, tokens;
  int tt = 1;
  bool norm = false;
  float eps = 0.0f;
  int epi = 0;
  bool emit_q8 = false, emit_norm = false, emit_ss = false;
  int slices = 1;
};

// What a GEMV wrote: y and the twin of y.
struct GemvOutputs {
  std::vector<float> y;
  std::vector<int8_t> q;
  std::vector<test::TwinDs> ds;
  std::vector<float> ss;
};

// The inputs of a matmul with K columns for `tokens` rows: x, the norm weight,
// and x's twin (of x * norm_w when the quantized path normalises).
struct Input {
  std::vector<float> x, norm_w;
  test::Q8Twin twin;
  Input(int64_t tokens, int64_t k, bool quantize_normed, uint32_t seed)
      : x(test::random_floats(tokens * k, seed)), norm_w(test::random_floats(k, seed + 1)) {
    twin = test::q8_twin(x.data(), tokens, k, quantize_normed ? norm_w.data() : nullptr);
  }
  std::vector<double> seen(int64_t t, int64_t k, bool quantized, bool norm, float eps) const {
    return test::matmul_input(x, norm_w, twin, t, k, quantized, norm, eps);
  }
  // The exact normalised input (for the bound on the twin's rounding).
  std::vector<double> exact(int64_t t, int64_t k, bool norm, float eps) const {
    std::vector<double> v(k);
    const double inv = norm ? test::inv_rms(twin, t, k, eps) : 1.0;
    for (int64_t c = 0; c < k; ++c) v[c] = static_cast<double>(x[t * k + c]) * inv * (norm ? norm_w[c] : 1.0f);
    return v;
  }
};

// The twin a kernel wrote for its output y (rows x m) must be the reference
// quantization of y (times y_norm_w) byte for byte; ss within float rounding.
void check_emitted_twin(const std::vector<float>& y, int64_t rows, int64_t m, const float* y_norm_w, bool q8, bool ss,
                        const std::vector<int8_t>& yq, const std::vector<test::TwinDs>& yds, const std::vector<float>& yss) {
  const auto ref = test::q8_twin(y.data(), rows, m, y_norm_w);
  if (q8) {
    for (int64_t i = 0; i < rows * m; ++i) ASSERT_EQ(yq[i], ref.q[i]) << "q " << i;
    for (int64_t i = 0; i < rows * (m / 32); ++i) {
      ASSERT_EQ(yds[i].x, ref.ds[i].x) << "d " << i;
      ASSERT_EQ(yds[i].y, ref.ds[i].y) << "s " << i;
    }
  }
  if (ss) {
    for (size_t i = 0; i < ref.ss.size(); ++i) ASSERT_NEAR(yss[i], ref.ss[i], 40 * kF32Eps * ref.ss[i]) << "ss " << i;
  }
}

GemvOutputs check_gemv(const GemvCase& c, GemvKernel kernel, uint32_t seed) {
  SCOPED_TRACE(cat(type_name(c.type), " K=", c.cols, " M=", c.rows, " tokens=", c.tokens, " tt=", c.tt, " norm=", c.norm,
                   " epi=", c.epi, " slices=", c.slices));
  const bool quantized = !is_float(c.type);
  const int64_t K = c.cols, M = c.rows, T = c.tokens;
  const auto w = test::random_weights(c.type, M, K, seed);
  const auto wf = test::dequantized(c.type, w, M, K);
  const auto wg = quantized ? test::gpu_matrix(c.type, w, M, K) : w;
  const Input in(T, K, quantized && c.norm, seed + 1);
  const auto epi = test::random_floats(T * M, seed + 3);
  const auto y_norm_w = test::random_floats(M, seed + 4);
  // Room for a graph of T + 2 rows run with T: rows past T must stay untouched.
  std::vector<float> y((T + 2) * M, -12345.0f);
  std::vector<int8_t> yq(T * M, 0);
  std::vector<test::TwinDs> yds(T * M / 32 + 1, test::TwinDs{0, 0});
  std::vector<float> yss(T * ((M + 31) / 32), 0.0f);
  const int n = static_cast<int>(T);
  const KernelSpec spec = gemv_spec(c.type, K, M, c.tt, c.norm ? c.eps : -1.0f, c.epi,
                                    Emit{c.emit_q8, c.emit_norm, c.emit_ss}, c.slices);
  test::launch(spec, T, kernel,
               MatmulArgs{wg.data(), in.x.data(), twin_in(in.twin), in.norm_w.data(), y.data(), epi.data(),
                          twin_out(yq, yds, yss), y_norm_w.data(), &n});
  for (int64_t t = 0; t < T; ++t) {
    const auto xs = in.seen(t, K, quantized, c.norm, c.eps);
    const auto xe = in.exact(t, K, c.norm, c.eps);
    const double inv = c.norm ? test::inv_rms(in.twin, t, K, c.eps) : 1.0;
    for (int64_t r = 0; r < M; ++r) {
      double ref = 0, exact = 0, abs_sum = 0, rounding = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double wk = wf[r * K + k];
        ref += wk * xs[k];
        exact += wk * xe[k];
        abs_sum += std::abs(wk * xs[k]);
        // The twin's rounding: at most half a step, d / 2, of the value's block (times 1/rms).
        if (quantized) rounding += std::abs(wk) * 0.5 * in.twin.ds[(t * K + k) / 32].x * inv;
      }
      double add = 0;
      if (c.epi == 1) add = epi[t * M + r];
      if (c.epi == 2) add = epi[r];
      const double tol = gemv_tolerance(K, abs_sum + std::abs(add));
      EXPECT_NEAR(y[t * M + r], ref + add, tol) << "token " << t << " row " << r;
      if (quantized) {
        EXPECT_NEAR(y[t * M + r], exact + add, tol + rounding * 1.0001) << "token " << t << " row " << r;
      }
      if (::testing::Test::HasFailure()) return {};
    }
  }
  for (int64_t i = T * M; i < (T + 2) * M; ++i) EXPECT_EQ(y[i], -12345.0f) << "row past the step written: " << i;
  const std::vector<float> y_step(y.begin(), y.begin() + T * M);
  check_emitted_twin(y_step, T, M, c.emit_norm ? y_norm_w.data() : nullptr, c.emit_q8, c.emit_ss, yq, yds, yss);
  return {y, yq, yds, yss};
}

// The emulator's __byte_perm on values worked out by hand (CudaKernelsNative.
// BytePermIsTheEmulatorsPrmt checks it against a GPU's).
TEST(CudaEmulatedIntrinsics, BytePermSelectsBytesByTheLowThreeBitsOfEachNibble) {
  const unsigned x = 0x44332211u, y = 0x88776655u;
  EXPECT_EQ(__byte_perm(x, y, 0x3210u), 0x44332211u);
  EXPECT_EQ(__byte_perm(x, y, 0x7654u), 0x88776655u);
  EXPECT_EQ(__byte_perm(x, y, 0x0426u), 0x11553377u);
  EXPECT_EQ(__byte_perm(x, y, 0x6420u), 0x77553311u);
  EXPECT_EQ(__byte_perm(x, y, 0xABCD3210u), 0x44332211u);  // the upper 16 bits select nothing
  // Bit 3 of a selector nibble is ignored (PTX prmt alone would replicate the
  // selected byte's sign: 0x00FFFF00, 0x7F00FF00, 0x000000FF).
  EXPECT_EQ(__byte_perm(0x7F80FF01u, 0u, 0xBA98u), 0x7F80FF01u);
  EXPECT_EQ(__byte_perm(0x7F80FF01u, 0u, 0x3B18u), 0x7F7FFF01u);
  EXPECT_EQ(__byte_perm(0u, 0x00800000u, 0x000Eu), 0x00000080u);
}

// iq4_levels (common.cuh) maps each nibble of a word to its level.
TEST(CudaEmulatedIntrinsics, Iq4LevelsOfEveryNibbleInEveryPlace) {
  auto check = [](u32 v) {
    int lo = 0, hi = 0;
    iq4_levels(v, &lo, &hi);
    for (int n = 0; n < 4; ++n) {
      const int b = static_cast<int>((v >> (8 * n)) & 0xFF);
      ASSERT_EQ(static_cast<int8_t>(static_cast<u32>(lo) >> (8 * n)), quant::kIq4nlValues[b & 0xF]) << std::hex << v;
      ASSERT_EQ(static_cast<int8_t>(static_cast<u32>(hi) >> (8 * n)), quant::kIq4nlValues[b >> 4]) << std::hex << v;
    }
  };
  for (u32 b = 0; b < 256; ++b)
    for (int n = 0; n < 4; ++n) check((0x9C3E71A5u & ~(0xFFu << (8 * n))) | (b << (8 * n)));
  std::mt19937 rng(7);
  for (int i = 0; i < 10000; ++i) check(static_cast<u32>(rng()));
}

TEST(CudaEmulatedGemv, EveryQuantizedFormatMatchesTheDequantizedProduct) {
  check_gemv({TensorType::Q4_0, 512, 37, 1}, gemv_q4_0::gemv, 1);
  check_gemv({TensorType::Q4_1, 512, 37, 1}, gemv_q4_1::gemv, 2);
  check_gemv({TensorType::Q5_0, 512, 37, 1}, gemv_q5_0::gemv, 3);
  check_gemv({TensorType::Q5_1, 512, 37, 1}, gemv_q5_1::gemv, 4);
  check_gemv({TensorType::Q8_0, 512, 37, 1}, gemv_q8_0::gemv, 5);
  check_gemv({TensorType::Q2_K, 512, 37, 1}, gemv_q2_k::gemv, 6);
  check_gemv({TensorType::Q3_K, 512, 37, 1}, gemv_q3_k::gemv, 7);
  check_gemv({TensorType::Q4_K, 512, 37, 1}, gemv_q4_k::gemv, 8);
  check_gemv({TensorType::Q5_K, 512, 37, 1}, gemv_q5_k::gemv, 9);
  check_gemv({TensorType::Q6_K, 512, 37, 1}, gemv_q6_k::gemv, 10);
  check_gemv({TensorType::IQ4_NL, 512, 37, 1}, gemv_iq4_nl::gemv, 14);
  check_gemv({TensorType::IQ4_XS, 512, 37, 1}, gemv_iq4_xs::gemv, 15);
}

TEST(CudaEmulatedGemv, FloatFormatsWithAndWithoutATail) {
  check_gemv({TensorType::F32, 512, 37, 1}, gemv_f32::gemv, 11);
  check_gemv({TensorType::F16, 512, 37, 1}, gemv_f16::gemv, 12);
  check_gemv({TensorType::BF16, 512, 37, 1}, gemv_bf16::gemv, 13);
  check_gemv({TensorType::F32, 172, 19, 1}, gemv_tail_f32::gemv, 21);
  check_gemv({TensorType::F16, 172, 19, 1}, gemv_tail_f16::gemv, 22);
  check_gemv({TensorType::BF16, 172, 19, 1}, gemv_tail_bf16::gemv, 23);
}

TEST(CudaEmulatedGemv, FusedNormResidualBiasAndTokenTiles) {
  check_gemv({TensorType::Q4_K, 768, 45, 1, 1, true, 1e-5f, 0}, gemv_norm_q4_k::gemv, 31);
  // 7 tokens in tiles of 4: the last tile is partial.
  check_gemv({TensorType::Q6_K, 256, 33, 7, 4, false, 0.0f, 1}, gemv_res_q6_k_tt4::gemv, 32);
  check_gemv({TensorType::Q8_0, 96, 21, 5, 4, true, 1e-6f, 2}, gemv_bias_q8_0_tt4::gemv, 33);
  check_gemv({TensorType::F16, 96, 21, 3, 1, true, 1e-6f, 0}, gemv_norm_f16::gemv, 34);
  // The level-table formats with a norm, a residual or bias, token tiles and
  // (IQ4_NL) the twin of the output.
  check_gemv({TensorType::IQ4_XS, 768, 45, 6, 4, true, 1e-5f, 1}, gemv_norm_res_iq4_xs_tt4::gemv, 35);
  check_gemv({TensorType::IQ4_NL, 96, 64, 5, 4, true, 1e-6f, 2, true, true, true}, gemv_bias_emit_iq4_nl_tt4::gemv, 36);
  // Tiles of 8 tokens (RAYO_GEMV_TOKEN_TILE=8): 11 tokens, the second tile partial.
  check_gemv({TensorType::Q6_K, 512, 64, 11, 8, true, 1e-5f, 1, true, true, true}, gemv_norm_res_emit_q6_k_tt8::gemv, 37);
}

TEST(CudaEmulatedGemv, WritesTheTwinOfItsOutputForTheNextMatmul) {
  // Two blocks of 32 rows, 3 tokens in one tile of 4, residual, and the twin of
  // y * (the next norm's weight) with its statistics.
  check_gemv({TensorType::Q4_K, 256, 64, 3, 4, false, 0.0f, 1, true, true, true}, gemv_emit_q4_k::gemv, 41);
  check_gemv({TensorType::Q5_0, 64, 96, 2, 1, false, 0.0f, 0, true, false, false}, gemv_emit_q5_0::gemv, 42);
  // 40 rows: the statistics of a partial last block (no q8 twin: 40 % 32 != 0).
  check_gemv({TensorType::F32, 64, 40, 2, 1, false, 0.0f, 0, false, false, true}, gemv_emit_ss_f32::gemv, 43);
}

// Two K slices a row (gemv.cuh): blocks of 16 warps, each pair taking every
// other pass over its rows, slice 1 handing its dots to slice 0. The outputs
// must be the one-slice kernel's bit for bit (and so within the references').
void check_slices(GemvCase c, GemvKernel one, GemvKernel two, uint32_t seed) {
  const GemvOutputs a = check_gemv(c, one, seed);
  c.slices = 2;
  const GemvOutputs b = check_gemv(c, two, seed);
  ASSERT_FALSE(::testing::Test::HasFailure());
  ASSERT_EQ(a.y.size(), b.y.size());
  for (size_t i = 0; i < a.y.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(a.y[i]), std::bit_cast<uint32_t>(b.y[i])) << "y " << i;
  ASSERT_EQ(a.q, b.q);
  for (size_t i = 0; i < a.ds.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(a.ds[i].x), std::bit_cast<uint32_t>(b.ds[i].x)) << "d " << i;
    ASSERT_EQ(std::bit_cast<uint32_t>(a.ds[i].y), std::bit_cast<uint32_t>(b.ds[i].y)) << "s " << i;
  }
  for (size_t i = 0; i < a.ss.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(a.ss[i]), std::bit_cast<uint32_t>(b.ss[i])) << "ss " << i;
}

TEST(CudaEmulatedGemv, TwoKSlicesGiveTheOneSliceBits) {
  // 160 units of 32 values a row: passes 0 and 1 give slice 0 units 0-31 and
  // 64-95, slice 1 32-63 and 96-127 (so the order of the adds shows); pass 2
  // slice 0 units 128-159, slice 1 none.
  check_slices({TensorType::Q4_0, 5120, 37, 1}, gemv_slices1_q4_0::gemv, gemv_slices2_q4_0::gemv, 71);
  // 36 units of 64 values (slice 1: 4 of them), a fused norm, the residual
  // and the output's twin with the next norm's weight.
  check_slices({TensorType::Q6_K, 2304, 64, 1, 1, true, 1e-5f, 1, true, true, true}, gemv_slices1_q6_k::gemv,
               gemv_slices2_q6_k::gemv, 72);
  // 68 units of 64 values, the bias, 40 rows (the last block's rows past M
  // read, not written) and the statistics of the output.
  check_slices({TensorType::Q4_K, 4352, 40, 1, 1, false, 0.0f, 2, false, false, true}, gemv_slices1_q4_k::gemv,
               gemv_slices2_q4_k::gemv, 73);
}

// Which GEMVs take two K slices (kernel_specs.h): decode ones of quantized
// weights and at most 2048 rows; their blocks are twice as wide.
TEST(CudaGemvSlices, QuantizedDecodeGemvsOfFewRowsTakeTwo) {
  EXPECT_EQ(gemv_slices(TensorType::Q4_K, 2048, 1), 2);
  EXPECT_EQ(gemv_slices(TensorType::Q8_0, 1536, 1), 2);
  EXPECT_EQ(gemv_slices(TensorType::Q4_K, 2049, 1), 1);
  EXPECT_EQ(gemv_slices(TensorType::Q4_K, 4096, 1), 1);  // slower with two on an H100
  EXPECT_EQ(gemv_slices(TensorType::Q6_K, 128256, 1), 1);
  EXPECT_EQ(gemv_slices(TensorType::Q4_K, 4096, 4), 1);
  EXPECT_EQ(gemv_slices(TensorType::F16, 4096, 1), 1);
  const KernelSpec one = gemv_spec(TensorType::Q4_K, 4096, 4096, 1, -1.0f, 1);
  const KernelSpec two = gemv_spec(TensorType::Q4_K, 4096, 4096, 1, -1.0f, 1, {}, 2);
  EXPECT_EQ(two.block, 2 * one.block);
  EXPECT_EQ(two.grid[0], one.grid[0]);
  // The tensor-core variant of a sliced GEMV is the unsliced one's.
  EXPECT_EQ(tensor_core_variant(two).defines, tensor_core_variant(one).defines);
}

using QuantizeKernel = void (*)(QuantizeArgs);

void check_quantize(int64_t k, bool q8, bool norm, bool ss, QuantizeKernel kernel, uint32_t seed) {
  SCOPED_TRACE(cat("quantize K=", k, " q8=", q8, " norm=", norm));
  const int64_t rows = 3;
  auto x = test::random_floats(rows * k, seed, 4.0f);
  for (int64_t c = 0; c < 32 && c < k; ++c) x[k + c] = 0.0f;  // an all-zero block: d = 0, q = 0
  const auto nw = test::random_floats(k, seed + 1);
  std::vector<int8_t> q(rows * k, 99);
  std::vector<test::TwinDs> ds(rows * k / 32 + 1, test::TwinDs{-1, -1});
  std::vector<float> sums(rows * ((k + 31) / 32), -1.0f);
  const int n = static_cast<int>(rows);
  // A block more than the rows: it must return at once.
  test::launch(quantize_spec(k, Emit{q8, norm, ss}), rows + 1, kernel,
               QuantizeArgs{x.data(), nw.data(), twin_out(q, ds, sums), &n});
  check_emitted_twin(x, rows, k, norm ? nw.data() : nullptr, q8, ss, q, ds, sums);
  if (q8) {
    EXPECT_EQ(ds[k / 32].x, 0.0f);
  }
}

TEST(CudaEmulatedGemv, QuantizeRowsWritesTheReferenceTwin) {
  check_quantize(512, true, true, true, quantize_norm_512::quantize_rows, 51);
  check_quantize(96, true, false, false, quantize_plain_96::quantize_rows, 52);
  check_quantize(172, false, false, true, quantize_ss_172::quantize_rows, 53);
}

using SwigluKernel = void (*)(GateUpArgs);

void check_swiglu(TensorType gt, TensorType ut, int64_t K, int64_t M, int64_t T, int tt, bool norm, float eps, bool emit,
                  SwigluKernel kernel, uint32_t seed) {
  SCOPED_TRACE(cat(type_name(gt), "/", type_name(ut), " K=", K, " M=", M));
  const bool quantized = !is_float(gt);
  const auto wg = test::random_weights(gt, M, K, seed), wu = test::random_weights(ut, M, K, seed + 1);
  const auto gf = test::dequantized(gt, wg, M, K), uf = test::dequantized(ut, wu, M, K);
  const auto gg = quantized ? test::gpu_matrix(gt, wg, M, K) : wg;
  const auto ug = quantized ? test::gpu_matrix(ut, wu, M, K) : wu;
  const Input in(T, K, quantized && norm, seed + 2);
  std::vector<float> y(T * M);
  std::vector<int8_t> yq(T * M);
  std::vector<test::TwinDs> yds(T * M / 32 + 1);
  std::vector<float> yss(T * ((M + 31) / 32));
  const int n = static_cast<int>(T);
  test::launch(gemv_swiglu_spec(gt, ut, K, M, tt, norm ? eps : -1.0f, Emit{emit, false, false}), T, kernel,
               GateUpArgs{gg.data(), ug.data(), in.x.data(), twin_in(in.twin), in.norm_w.data(), y.data(),
                          twin_out(yq, yds, yss), &n});
  for (int64_t t = 0; t < T; ++t) {
    const auto xs = in.seen(t, K, quantized, norm, eps);
    for (int64_t r = 0; r < M; ++r) {
      double g = 0, u = 0, ga = 0, ua = 0;
      for (int64_t k = 0; k < K; ++k) {
        g += gf[r * K + k] * xs[k];
        u += uf[r * K + k] * xs[k];
        ga += std::abs(gf[r * K + k] * xs[k]);
        ua += std::abs(uf[r * K + k] * xs[k]);
      }
      const double ref = g / (1.0 + std::exp(-g)) * u;
      // silu has slope at most 1.1: the gate's error passes on scaled by |u|,
      // the up's by |silu(g)|; expf and the divide add a few ulps of the result.
      const double tol = 1.1 * gemv_tolerance(K, ga) * std::abs(u) + gemv_tolerance(K, ua) * std::abs(g) +
                         8 * kF32Eps * std::abs(ref);
      ASSERT_NEAR(y[t * M + r], ref, tol) << "token " << t << " row " << r;
    }
  }
  if (emit) check_emitted_twin(y, T, M, nullptr, true, false, yq, yds, yss);
}

TEST(CudaEmulatedGemv, GateUpGluWithMixedFormats) {
  check_swiglu(TensorType::Q4_K, TensorType::Q6_K, 512, 64, 6, 4, true, 1e-5f, true, swiglu_q4_k_q6_k::gemv_swiglu, 51);
  check_swiglu(TensorType::F16, TensorType::F16, 72, 13, 1, 1, false, 0.0f, false, swiglu_f16::gemv_swiglu, 52);
  // IQ4_XS reads Q4_K's activations: 2 tokens in one tile multiply both matrices together.
  check_swiglu(TensorType::IQ4_XS, TensorType::Q4_K, 512, 64, 2, 2, true, 1e-5f, true, swiglu_iq4_xs_q4_k::gemv_swiglu,
               53);
}

using EmbedKernel = void (*)(EmbedArgs);

// embed must reproduce the reference dequantizer bit for bit (the emulator
// computes the same float operations in the same order as quant/dequantize.cpp).
void check_embed(TensorType t, int64_t cols, EmbedKernel kernel, uint32_t seed, bool emit = false) {
  SCOPED_TRACE(type_name(t));
  const int64_t vocab = 11;
  const auto w = test::random_weights(t, vocab, cols, seed);
  const auto wf = test::dequantized(t, w, vocab, cols);
  const std::vector<int> tokens = {3, 0, 10, 3, 7};
  const int n = static_cast<int>(tokens.size());
  const auto nw = test::random_floats(cols, seed + 1);
  std::vector<float> y(tokens.size() * cols);
  std::vector<int8_t> yq(y.size());
  std::vector<test::TwinDs> yds(y.size() / 32 + 1);
  std::vector<float> yss(tokens.size() * ((cols + 31) / 32));
  test::launch(dequant_spec(t, cols, Emit{emit, emit, emit}), n, kernel,
               EmbedArgs{w.data(), tokens.data(), y.data(), nw.data(), twin_out(yq, yds, yss), &n});
  for (size_t i = 0; i < tokens.size(); ++i)
    for (int64_t k = 0; k < cols; ++k)
      ASSERT_EQ(y[i * cols + k], wf[tokens[i] * cols + k]) << "token " << tokens[i] << " col " << k;
  if (emit) check_emitted_twin(y, n, cols, nw.data(), true, true, yq, yds, yss);
}

TEST(CudaEmulatedDequant, EmbedRowsAreBitExactForEveryFormat) {
  check_embed(TensorType::F32, 512, embed_f32::embed, 61);
  check_embed(TensorType::F16, 512, embed_f16::embed, 62);
  check_embed(TensorType::BF16, 512, embed_bf16::embed, 63);
  check_embed(TensorType::Q4_0, 512, embed_q4_0::embed, 64);
  check_embed(TensorType::Q4_1, 512, embed_q4_1::embed, 65);
  check_embed(TensorType::Q5_0, 512, embed_q5_0::embed, 66);
  check_embed(TensorType::Q5_1, 512, embed_q5_1::embed, 67);
  check_embed(TensorType::Q8_0, 512, embed_q8_0::embed, 68);
  check_embed(TensorType::Q2_K, 512, embed_q2_k::embed, 69);
  check_embed(TensorType::Q3_K, 512, embed_q3_k::embed, 70);
  check_embed(TensorType::Q4_K, 512, embed_q4_k::embed, 71);
  check_embed(TensorType::Q5_K, 512, embed_q5_k::embed, 72);
  check_embed(TensorType::Q6_K, 512, embed_q6_k::embed, 73);
  check_embed(TensorType::IQ4_NL, 512, embed_iq4_nl::embed, 78);
  check_embed(TensorType::IQ4_XS, 512, embed_iq4_xs::embed, 79);
  check_embed(TensorType::F32, 172, embed_tail_f32::embed, 74);
  check_embed(TensorType::F16, 172, embed_tail_f16::embed, 75);
  check_embed(TensorType::BF16, 172, embed_tail_bf16::embed, 76);
}

TEST(CudaEmulatedDequant, EmbedWritesTheFirstLayersTwin) {
  check_embed(TensorType::Q8_0, 96, embed_emit_q8_0::embed, 77, true);
}

// A quantized weight in a fused node with float weights is dequantized to f16
// at load: each value is the reference value rounded to half (bit-exact).
template <typename Dequant>
void check_dequant_f16(TensorType t, Dequant dq, uint32_t seed) {
  SCOPED_TRACE(type_name(t));
  const int64_t rows = 9, cols = 512;
  const auto w = test::random_weights(t, rows, cols, seed);
  const auto wf = test::dequantized(t, w, rows, cols);
  std::vector<uint16_t> out(rows * cols);
  dq(t, w.data(), out.data(), rows);
  for (int64_t i = 0; i < rows * cols; ++i) ASSERT_EQ(out[i], fp32_to_fp16(wf[i])) << i;
}

#define DEQUANT(NS)                                                                                          \
  [](TensorType t, const uint8_t* w, uint16_t* out, long long rows) {                                        \
    test::launch(dequant_spec(t, 512, {}, "dequant_f16"), 0, NS::dequant_f16, DequantArgs{w, out, rows});    \
  }

TEST(CudaEmulatedDequant, QuantizedFormatsToF16) {
  check_dequant_f16(TensorType::Q4_0, DEQUANT(embed_q4_0), 80);
  check_dequant_f16(TensorType::Q4_1, DEQUANT(embed_q4_1), 81);
  check_dequant_f16(TensorType::Q5_0, DEQUANT(embed_q5_0), 82);
  check_dequant_f16(TensorType::Q5_1, DEQUANT(embed_q5_1), 83);
  check_dequant_f16(TensorType::Q2_K, DEQUANT(embed_q2_k), 84);
  check_dequant_f16(TensorType::Q3_K, DEQUANT(embed_q3_k), 85);
  check_dequant_f16(TensorType::Q6_K, DEQUANT(embed_q6_k), 86);
  check_dequant_f16(TensorType::IQ4_NL, DEQUANT(embed_iq4_nl), 87);
  check_dequant_f16(TensorType::IQ4_XS, DEQUANT(embed_iq4_xs), 88);
}

}  // namespace
}  // namespace rayo::cuda
