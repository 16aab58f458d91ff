// The exact GEMMs (gemm.cuh's GEMM_EXACT: int8 tensor cores, sums in the GEMVs'
// order) run through the SIMT emulator beside the GEMVs of the same macros, on
// the same inputs: every output, every twin byte and every cache half must be
// the GEMV's, bit for bit. (The GEMVs themselves are checked against float64
// references in cuda_emulated_gemv_test.cpp.) This is what lets a
// batch-invariant graph use tensor cores for its large steps.
#include <gtest/gtest.h>

#include <cstring>

#include "support/simt/simt.h"
// Shape-independent kernel headers at global scope, before the namespaced
// kernel variants (their include guards keep them there).
#include "backends/cuda/kernel_specs.h"
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/gemm.cuh"
#include "backends/cuda/kernels/gemv.cuh"
#include "cuda_emulated_gemm_exact_variants.inc"

#include "common/strings.h"
#include "support/simt/kernel_test_util.h"
#include "support/simt/q8_reference.h"
#include "support/simt/qkv_check.h"
#include "support/simt/spec_launch.h"

namespace rayo::cuda {
namespace {

using test::kF32Eps;

template <typename T>
void expect_same_bits(const std::vector<T>& gemv, const std::vector<T>& gemm, const char* what) {
  ASSERT_EQ(gemv.size(), gemm.size());
  for (size_t i = 0; i < gemv.size(); ++i)
    ASSERT_EQ(0, std::memcmp(&gemv[i], &gemm[i], sizeof(T))) << what << " " << i << " differs from the GEMV's";
}

// What a matmul kernel writes: y and its twin.
struct MatmulOut {
  std::vector<float> y;
  std::vector<int8_t> yq;
  std::vector<test::TwinDs> yds;
  std::vector<float> yss;
  MatmulOut(int64_t tokens, int64_t m)
      : y(tokens * m, -12345.0f), yq(tokens * m), yds(tokens * m / 32 + 1), yss(tokens * ((m + 31) / 32)) {}
};

void expect_same(const MatmulOut& gemv, const MatmulOut& gemm) {
  expect_same_bits(gemv.y, gemm.y, "y");
  expect_same_bits(gemv.yq, gemm.yq, "twin q");
  expect_same_bits(gemv.yds, gemm.yds, "twin (d, s)");
  expect_same_bits(gemv.yss, gemm.yss, "twin ss");
}

using MatmulKernel = void (*)(MatmulArgs);

TwinOut twin_out(MatmulOut& out) { return {out.yq.data(), reinterpret_cast<float2*>(out.yds.data()), out.yss.data()}; }

// y = W x (+ norm, epilogue, twin) for `tokens` rows: GEMV (token tiles of 4)
// and exact GEMM, both with the variant's macros; inputs in [-x_scale, x_scale].
void check_matmul(TensorType type, int64_t k, int64_t m, int64_t tokens, MatmulKernel gemv, MatmulKernel gemm,
                  uint32_t seed, float x_scale = 1.0f) {
  SCOPED_TRACE(cat(type_name(type), " K=", k, " M=", m, " tokens=", tokens, " x_scale=", x_scale));
  const auto w = test::gpu_matrix(type, test::random_weights(type, m, k, seed), m, k);
  const auto x = test::random_floats(tokens * k, seed + 1, x_scale), nw = test::random_floats(k, seed + 2);
  const auto twin = test::q8_twin(x.data(), tokens, k, nw.data());
  const auto epi = test::random_floats(tokens * m, seed + 3), y_norm_w = test::random_floats(m, seed + 4);
  const int n = static_cast<int>(tokens);
  // The variants' macros (cuda_emulated_gemm_exact_variants.inc): norm, residual, twin of y * its norm.
  const KernelSpec spec = gemv_spec(type, k, m, 4, 1e-5f, 1, Emit{true, true, true});
  auto run = [&](const KernelSpec& s, MatmulKernel kernel) {
    MatmulOut out(tokens, m);
    test::launch(s, tokens, kernel,
                 MatmulArgs{w.data(), x.data(),
                            {twin.q.data(), reinterpret_cast<const float2*>(twin.ds.data()), twin.ss.data()},
                            nw.data(), out.y.data(), epi.data(), twin_out(out), y_norm_w.data(), &n});
    return out;
  };
  const MatmulOut by_gemv = run(spec, gemv);
  const MatmulOut by_gemm = run(tensor_core_variant(spec, GemmTile::Exact), gemm);
  for (float v : by_gemv.y) ASSERT_TRUE(std::isfinite(v));
  expect_same(by_gemv, by_gemm);
}

// 96 rows (a partial row tile) by 37 tokens (a partial token tile), with a
// fused norm, a residual and the next matmul's twin (of y times its norm).
TEST(CudaEmulatedGemmExact, EveryQuantizedFormatGivesTheGemvsBits) {
  check_matmul(TensorType::Q4_0, 512, 96, 37, gemv_q4_0::gemv, exact_q4_0::gemm, 1);
  check_matmul(TensorType::Q4_1, 512, 96, 37, gemv_q4_1::gemv, exact_q4_1::gemm, 2);
  check_matmul(TensorType::Q5_0, 512, 96, 37, gemv_q5_0::gemv, exact_q5_0::gemm, 3);
  check_matmul(TensorType::Q5_1, 512, 96, 37, gemv_q5_1::gemv, exact_q5_1::gemm, 4);
  check_matmul(TensorType::Q8_0, 512, 96, 37, gemv_q8_0::gemv, exact_q8_0::gemm, 5);
  check_matmul(TensorType::Q2_K, 512, 96, 37, gemv_q2_k::gemv, exact_q2_k::gemm, 6);
  check_matmul(TensorType::Q3_K, 512, 96, 37, gemv_q3_k::gemv, exact_q3_k::gemm, 7);
  check_matmul(TensorType::Q4_K, 512, 96, 37, gemv_q4_k::gemv, exact_q4_k::gemm, 8);
  check_matmul(TensorType::Q5_K, 512, 96, 37, gemv_q5_k::gemv, exact_q5_k::gemm, 9);
  check_matmul(TensorType::Q6_K, 512, 96, 37, gemv_q6_k::gemv, exact_q6_k::gemm, 10);
  check_matmul(TensorType::IQ4_NL, 512, 96, 37, gemv_iq4_nl::gemv, exact_iq4_nl::gemm, 14);
  check_matmul(TensorType::IQ4_XS, 512, 96, 37, gemv_iq4_xs::gemv, exact_iq4_xs::gemm, 15);
}

// Rows whose lanes hold several units, some one more than others: 68 units of
// 64 values (lanes 0..3 three, the rest two), 33 of 32 (lane 0 two; Q8_0 and
// IQ4_NL); and a row of 3 units, most lanes none (K = 96).
TEST(CudaEmulatedGemmExact, LanesOfUnequalLengthsAndShortRows) {
  check_matmul(TensorType::Q4_K, 4352, 40, 33, gemv_q4_k_long::gemv, exact_q4_k_long::gemm, 11);
  check_matmul(TensorType::Q8_0, 1056, 40, 20, gemv_q8_0_long::gemv, exact_q8_0_long::gemm, 12);
  check_matmul(TensorType::Q8_0, 96, 64, 5, gemv_q8_0_k96::gemv, exact_q8_0_k96::gemm, 13);
  check_matmul(TensorType::IQ4_NL, 1056, 40, 20, gemv_iq4_nl_long::gemv, exact_iq4_nl_long::gemm, 16);
}

// Rows of rms about 2e6 before the fused norm (a deep model's residual
// stream): the exact tile keeps activations as int8 and float scales, as the
// GEMV does, so nothing overflows and the bits still agree.
TEST(CudaEmulatedGemmExact, HugeResidualsThroughAFusedNormGiveTheGemvsBits) {
  check_matmul(TensorType::Q4_K, 512, 96, 37, gemv_q4_k::gemv, exact_q4_k::gemm, 17, 4e6f);
  check_matmul(TensorType::Q6_K, 512, 96, 37, gemv_q6_k::gemv, exact_q6_k::gemm, 18, 4e6f);
}

using SwigluKernel = void (*)(GateUpArgs);

// Gate and up of two formats of one unit shape (rows 0..31 and 32..63 of a
// tile of different formats), with the Q2_K's activation sums in the second.
void check_swiglu(TensorType gate, TensorType up, SwigluKernel gemv, SwigluKernel gemm, uint32_t seed) {
  SCOPED_TRACE(cat(type_name(gate), "/", type_name(up)));
  const int64_t k = 512, m = 64, tokens = 40;
  const auto wg = test::gpu_matrix(gate, test::random_weights(gate, m, k, seed), m, k);
  const auto wu = test::gpu_matrix(up, test::random_weights(up, m, k, seed + 1), m, k);
  const auto x = test::random_floats(tokens * k, seed + 2), nw = test::random_floats(k, seed + 3);
  const auto twin = test::q8_twin(x.data(), tokens, k, nw.data());
  const int n = static_cast<int>(tokens);
  const KernelSpec spec = gemv_swiglu_spec(gate, up, k, m, 4, 1e-5f, Emit{true, false, true});
  auto run = [&](const KernelSpec& s, SwigluKernel kernel) {
    MatmulOut out(tokens, m);
    test::launch(s, tokens, kernel,
                 GateUpArgs{wg.data(), wu.data(), x.data(),
                            {twin.q.data(), reinterpret_cast<const float2*>(twin.ds.data()), twin.ss.data()},
                            nw.data(), out.y.data(), twin_out(out), &n});
    return out;
  };
  const MatmulOut by_gemv = run(spec, gemv);
  const MatmulOut by_gemm = run(tensor_core_variant(spec, GemmTile::Exact), gemm);
  expect_same(by_gemv, by_gemm);
}

TEST(CudaEmulatedGemmExact, GateUpGluGivesTheGemvsBits) {
  check_swiglu(TensorType::Q4_K, TensorType::Q5_K, gemv_swiglu_q4_k_q5_k::gemv_swiglu,
               exact_swiglu_q4_k_q5_k::gemm_swiglu, 21);
  check_swiglu(TensorType::Q3_K, TensorType::Q2_K, gemv_swiglu_q3_k_q2_k::gemv_swiglu,
               exact_swiglu_q3_k_q2_k::gemm_swiglu, 22);
  // IQ4_XS beside Q4_K: one unit shape, two formats' Meta in one tile.
  check_swiglu(TensorType::IQ4_XS, TensorType::Q4_K, gemv_swiglu_iq4_xs_q4_k::gemv_swiglu,
               exact_swiglu_iq4_xs_q4_k::gemm_swiglu, 23);
}

// q, k and v of a Q4_K_M layer (v in Q6_K: tiles of two unit shapes, one
// matrix each), NeoX rotation with frequency factors, biases and a fused norm:
// the GEMV's q and cache halves bit for bit, and the GEMM's within the
// reference check's bounds.
TEST(CudaEmulatedGemmExact, QkvRopeStoreGivesTheGemvsBits) {
  test::QkvCase c{TensorType::Q4_K, TensorType::Q4_K, TensorType::Q6_K, 256, 4, 2, 64};
  c.rope.type = graph::RopeType::NeoX;
  c.rope.n_rot = 64;
  c.rope.freq_base = 1e6f;
  c.rope.freq_factors = 0;
  c.ff = true;
  c.bias = true;
  c.norm = true;
  c.eps = 1e-5f;
  test::QkvTokens tokens{std::vector<int>(40), std::vector<int>(40, 0), {2, 0, 3, 1}, 4};
  for (int t = 0; t < 40; ++t) tokens.positions[t] = t;
  int checked = 0;
  auto run = [&](const test::QkvBuffers& b) {
    const KernelSpec spec = qkv_rope_store_spec(b.shape, 4);
    const size_t qn = static_cast<size_t>(b.rows) * c.n_head * c.head_dim;
    const size_t cache_n = static_cast<size_t>(16 * 4) * c.n_head_kv * c.head_dim;
    float* const qo = b.args.q_out;
    u16* const kc = b.args.k_cache;
    u16* const vc = b.args.v_cache;
    test::launch(spec, b.rows, gemv_qkv::qkv_rope_store, b.args);
    const std::vector<float> q(qo, qo + qn);
    const std::vector<uint16_t> k(kc, kc + cache_n), v(vc, vc + cache_n);
    std::fill(qo, qo + qn, 0.0f);
    std::fill(kc, kc + cache_n, uint16_t{0});
    std::fill(vc, vc + cache_n, uint16_t{0});
    test::launch(tensor_core_variant(spec, GemmTile::Exact), b.rows, exact_qkv::gemm_qkv_rope_store, b.args);
    expect_same_bits(q, std::vector<float>(qo, qo + qn), "q");
    expect_same_bits(k, std::vector<uint16_t>(kc, kc + cache_n), "k cache");
    expect_same_bits(v, std::vector<uint16_t>(vc, vc + cache_n), "v cache");
    ++checked;
  };
  // The GEMV's bound: K/32 units per lane, 5 shuffle levels and the epilogue.
  auto tolerance = [](int64_t k, double abs_sum) { return (static_cast<double>(k) / 32 + 24) * kF32Eps * abs_sum + 1e-30; };
  test::check_qkv(c, tokens, 41, run, tolerance);
  EXPECT_EQ(checked, 1);
}

}  // namespace
}  // namespace rayo::cuda
