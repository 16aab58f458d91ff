// The dense f16 GEMM (gemm_dense.cu) and the decode of quantized matrices it
// multiplies (decode_f16.cu) on the SIMT emulator. The decode, for every
// format: each value the reference dequantizer's rounded once to f16, at its
// place in the row. The GEMM, launched as its spec says, against float64
// products of the same f16 values: partial row and
// token tiles, more K tiles than stages (the ring of stages wraps), fewer K
// tiles than stages, blocks past the step's rows that must return, the
// residual added in the store (a MatMulAdd node's), and gate/up's activation.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "support/simt/simt.h"
#include "backends/cuda/kernel_specs.h"
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/mma.cuh"
#include "backends/cuda/kernels/unit_halves.cuh"

#define ROWS 200
#define COLS 160
namespace dense_200x160 {
#include "backends/cuda/kernels/gemm_dense.cu"
}
#include "support/simt/undef_shapes.h"

#define ROWS 128
#define COLS 32
namespace dense_128x32 {
#include "backends/cuda/kernels/gemm_dense.cu"
}
#include "support/simt/undef_shapes.h"

#define ROWS 144
#define COLS 64
#define GLU 1
namespace dense_glu_144x64 {
#include "backends/cuda/kernels/gemm_dense.cu"
}
#include "support/simt/undef_shapes.h"

#define ROWS 32
#define COLS 96
#define GLU 1
#define GELU 1
namespace dense_geglu_32x96 {
#include "backends/cuda/kernels/gemm_dense.cu"
}
#include "support/simt/undef_shapes.h"

#define WTYPE FMT_Q4_K
#define ROWS 40
#define COLS 512
#define GLU_HALF 1
namespace decode_q4_k_up {
#include "backends/cuda/kernels/decode_f16.cu"
}
#include "support/simt/undef_shapes.h"

#define WTYPE FMT_Q4_0
#define ROWS 40
#define COLS 512
namespace decode_q4_0 {
#include "backends/cuda/kernels/decode_f16.cu"
}
#include "support/simt/undef_shapes.h"

#define WTYPE FMT_Q4_1
#define ROWS 40
#define COLS 512
namespace decode_q4_1 {
#include "backends/cuda/kernels/decode_f16.cu"
}
#include "support/simt/undef_shapes.h"

#define WTYPE FMT_Q5_0
#define ROWS 40
#define COLS 512
namespace decode_q5_0 {
#include "backends/cuda/kernels/decode_f16.cu"
}
#include "support/simt/undef_shapes.h"

#define WTYPE FMT_Q5_1
#define ROWS 40
#define COLS 512
namespace decode_q5_1 {
#include "backends/cuda/kernels/decode_f16.cu"
}
#include "support/simt/undef_shapes.h"

#define WTYPE FMT_Q8_0
#define ROWS 40
#define COLS 512
namespace decode_q8_0 {
#include "backends/cuda/kernels/decode_f16.cu"
}
#include "support/simt/undef_shapes.h"

#define WTYPE FMT_Q8_0
#define ROWS 3
#define COLS 96
namespace decode_q8_0_k96 {
#include "backends/cuda/kernels/decode_f16.cu"
}
#include "support/simt/undef_shapes.h"

#define WTYPE FMT_IQ4_NL
#define ROWS 40
#define COLS 512
namespace decode_iq4_nl {
#include "backends/cuda/kernels/decode_f16.cu"
}
#include "support/simt/undef_shapes.h"

#define WTYPE FMT_Q2_K
#define ROWS 40
#define COLS 512
namespace decode_q2_k {
#include "backends/cuda/kernels/decode_f16.cu"
}
#include "support/simt/undef_shapes.h"

#define WTYPE FMT_Q3_K
#define ROWS 40
#define COLS 512
namespace decode_q3_k {
#include "backends/cuda/kernels/decode_f16.cu"
}
#include "support/simt/undef_shapes.h"

#define WTYPE FMT_Q4_K
#define ROWS 40
#define COLS 512
namespace decode_q4_k {
#include "backends/cuda/kernels/decode_f16.cu"
}
#include "support/simt/undef_shapes.h"

#define WTYPE FMT_Q5_K
#define ROWS 40
#define COLS 512
namespace decode_q5_k {
#include "backends/cuda/kernels/decode_f16.cu"
}
#include "support/simt/undef_shapes.h"

#define WTYPE FMT_Q6_K
#define ROWS 40
#define COLS 512
namespace decode_q6_k {
#include "backends/cuda/kernels/decode_f16.cu"
}
#include "support/simt/undef_shapes.h"

#define WTYPE FMT_IQ4_XS
#define ROWS 40
#define COLS 512
namespace decode_iq4_xs {
#include "backends/cuda/kernels/decode_f16.cu"
}
#include "support/simt/undef_shapes.h"

#include "common/error.h"
#include "common/half.h"
#include "common/strings.h"
#include "support/simt/kernel_test_util.h"
#include "support/simt/q8_reference.h"
#include "support/simt/spec_launch.h"

namespace rayo::cuda {
namespace {

using DenseKernel = void (*)(DenseGemmArgs);

std::vector<uint16_t> random_halves(size_t n, uint32_t seed) {
  const auto f = test::random_floats(n, seed);
  std::vector<uint16_t> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(f[i]);
  return h;
}

// The products of f16 values are exact in f32; the sums round along K / 16
// tensor-core steps. With `add`, y = W x + a residual of large values.
void check_dense(int64_t M, int64_t K, int64_t T, DenseKernel kernel, uint32_t seed, bool add = false) {
  SCOPED_TRACE(cat("M=", M, " K=", K, " tokens=", T, add ? " with a residual" : ""));
  const auto w = random_halves(M * K, seed), x = random_halves(T * K, seed + 1);
  std::vector<float> y((T + 2) * M, -12345.0f), residual = test::random_floats(T * M, seed + 2);
  for (float& v : residual) v *= 1e5f;
  const int n = static_cast<int>(T);
  const KernelSpec spec = dense_gemm_spec(M, K);
  // Launched for a graph of a token block more than the step: those blocks must return.
  test::launch(spec, T + kDenseGemmTokens, kernel,
               DenseGemmArgs{w.data(), x.data(), y.data(), add ? residual.data() : nullptr, &n});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t r = 0; r < M; ++r) {
      double ref = add ? residual[t * M + r] : 0.0, abs_sum = std::abs(ref);
      for (int64_t k = 0; k < K; ++k) {
        const double p = static_cast<double>(fp16_to_fp32(w[r * K + k])) * fp16_to_fp32(x[t * K + k]);
        ref += p;
        abs_sum += std::abs(p);
      }
      ASSERT_NEAR(y[t * M + r], ref, (static_cast<double>(K) / 16 + 16) * test::kF32Eps * abs_sum + 1e-30)
          << "token " << t << " row " << r;
    }
  for (int64_t i = T * M; i < (T + 2) * M; ++i) ASSERT_EQ(y[i], -12345.0f) << "row past the step written: " << i;
}

using DecodeKernel = void (*)(DequantArgs);

// decode_f16 of a rows x cols matrix of `type` in its GPU layout, launched as
// its spec says (one block of 256 threads here: the 32-value formats' threads
// take two units or more, the stride loop), against the reference dequantizer.
// With glu_half 1 (up), row r lands at row 16 (r / 8) + 8 + r % 8 of gate/up's
// interleave, and the gate's rows are left alone.
void check_decode(TensorType type, int64_t rows, int64_t cols, DecodeKernel kernel, uint32_t seed, int glu_half = -1) {
  SCOPED_TRACE(cat(type_name(type), " ", rows, " x ", cols, glu_half >= 0 ? " into gate/up's interleave" : ""));
  const auto w = test::random_weights(type, rows, cols, seed);
  const auto ref = test::dequantized(type, w, rows, cols);
  const auto wg = test::gpu_matrix(type, w, rows, cols);
  const int64_t out_rows = glu_half >= 0 ? 2 * rows : rows;
  std::vector<uint16_t> out(out_rows * cols + 64, 0x7e00);  // f16 NaN: a value left unwritten shows
  test::launch(decode_f16_spec(type, rows, cols, glu_half), 0, kernel, DequantArgs{wg.data(), out.data(), rows});
  std::vector<bool> mine(out.size(), false);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k) {
      const int64_t to = glu_half >= 0 ? (r / 8) * 16 + r % 8 + 8 * glu_half : r;
      const float got = fp16_to_fp32(out[to * cols + k]), want = ref[r * cols + k];
      mine[to * cols + k] = true;
      // One f16 rounding of the exact value (unit_halves.cuh), which the
      // reference's float arithmetic may differ from by an ulp of float.
      ASSERT_NEAR(got, want, std::abs(want) / 2048 + 6e-8) << "row " << r << " column " << k;
    }
  for (size_t i = 0; i < out.size(); ++i)
    if (!mine[i]) ASSERT_EQ(out[i], 0x7e00) << "written outside the matrix's rows: " << i;
}

TEST(CudaEmulatedDenseGemm, DecodeGivesEveryFormatsValuesInF16) {
  check_decode(TensorType::Q4_0, 40, 512, decode_q4_0::decode_f16, 1);
  check_decode(TensorType::Q4_1, 40, 512, decode_q4_1::decode_f16, 2);
  check_decode(TensorType::Q5_0, 40, 512, decode_q5_0::decode_f16, 3);
  check_decode(TensorType::Q5_1, 40, 512, decode_q5_1::decode_f16, 4);
  check_decode(TensorType::Q8_0, 40, 512, decode_q8_0::decode_f16, 5);
  check_decode(TensorType::Q8_0, 3, 96, decode_q8_0_k96::decode_f16, 6);  // rows of an odd number of blocks
  check_decode(TensorType::IQ4_NL, 40, 512, decode_iq4_nl::decode_f16, 7);
  check_decode(TensorType::Q2_K, 40, 512, decode_q2_k::decode_f16, 8);
  check_decode(TensorType::Q3_K, 40, 512, decode_q3_k::decode_f16, 9);
  check_decode(TensorType::Q4_K, 40, 512, decode_q4_k::decode_f16, 10);
  check_decode(TensorType::Q5_K, 40, 512, decode_q5_k::decode_f16, 11);
  check_decode(TensorType::Q6_K, 40, 512, decode_q6_k::decode_f16, 12);
  check_decode(TensorType::IQ4_XS, 40, 512, decode_iq4_xs::decode_f16, 13);
  check_decode(TensorType::Q4_K, 40, 512, decode_q4_k_up::decode_f16, 14, 1);
}

TEST(CudaEmulatedDenseGemm, MatchesTheProductOfItsHalves) {
  // Two row tiles (the second of 72 rows), five K tiles through four stages,
  // two token tiles (the second of 22 tokens).
  check_dense(200, 160, 150, dense_200x160::gemm_dense, 1);
  // One K tile (the prologue's other stages stay empty), one token.
  check_dense(128, 32, 1, dense_128x32::gemm_dense, 2);
  check_dense(200, 160, 40, dense_200x160::gemm_dense, 3, true);
}

// Gate/up's product: rows interleaved by 8 (decode_f16.cu's GLU_HALF), M
// outputs act(gate . x) * (up . x), against float64 sums of the same halves.
void check_glu(int64_t M, int64_t K, int64_t T, DenseKernel kernel, bool gelu, uint32_t seed) {
  SCOPED_TRACE(cat("M=", M, " K=", K, " tokens=", T, gelu ? " GELU" : " SiLU"));
  const auto gate = random_halves(M * K, seed), up = random_halves(M * K, seed + 1), x = random_halves(T * K, seed + 2);
  std::vector<uint16_t> w(2 * M * K);
  for (int64_t r = 0; r < M; ++r)
    for (int64_t k = 0; k < K; ++k) {
      w[((r / 8) * 16 + r % 8) * K + k] = gate[r * K + k];
      w[((r / 8) * 16 + 8 + r % 8) * K + k] = up[r * K + k];
    }
  std::vector<float> y((T + 2) * M, -12345.0f);
  const int n = static_cast<int>(T);
  KernelSpec spec = dense_gemm_spec(2 * M, K, true);
  test::launch(spec, T + kDenseGemmTokens, kernel, DenseGemmArgs{w.data(), x.data(), y.data(), nullptr, &n});
  auto dot = [&](const std::vector<uint16_t>& m, int64_t r, int64_t t, double* abs_sum) {
    double s = 0;
    *abs_sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      const double p = static_cast<double>(fp16_to_fp32(m[r * K + k])) * fp16_to_fp32(x[t * K + k]);
      s += p;
      *abs_sum += std::abs(p);
    }
    return s;
  };
  for (int64_t t = 0; t < T; ++t)
    for (int64_t r = 0; r < M; ++r) {
      double ga, ua;
      const double g = dot(gate, r, t, &ga), u = dot(up, r, t, &ua);
      const double act = gelu ? 0.5 * g * (1 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)))
                              : g / (1 + std::exp(-g));
      // Each sum's error (as check_dense), through act (slope at most 1.13) and the product.
      const double eg = (static_cast<double>(K) / 16 + 16) * test::kF32Eps * ga + 1e-30;
      const double eu = (static_cast<double>(K) / 16 + 16) * test::kF32Eps * ua + 1e-30;
      ASSERT_NEAR(y[t * M + r], act * u, 1.13 * (eg * std::abs(u) + std::abs(g) * eu + eg * eu) + 1e-6 * std::abs(act * u))
          << "token " << t << " output " << r;
    }
  for (int64_t i = T * M; i < (T + 2) * M; ++i) ASSERT_EQ(y[i], -12345.0f) << "row past the step written: " << i;
}

TEST(CudaEmulatedDenseGemm, GateUpInterleavedGivesTheActivationsProduct) {
  // 72 outputs: a row tile of 64 and one of 8 (of the 144 interleaved rows).
  check_glu(72, 64, 150, dense_glu_144x64::gemm_dense, false, 4);
  check_glu(16, 96, 9, dense_geglu_32x96::gemm_dense, true, 5);
}

TEST(CudaEmulatedDenseGemm, SpecRefusesKThatIsNotAMultipleOf32) {
  EXPECT_THROW(dense_gemm_spec(128, 48), Error);
  EXPECT_THROW(dense_gemm_spec(136, 64, true), Error);  // gate/up rows come in groups of 8 of each
  EXPECT_THROW(decode_f16_spec(TensorType::Q4_K, 12, 256, 0), Error);
  const KernelSpec s = dense_gemm_spec(4096, 14336);
  EXPECT_EQ(s.dynamic_shared, kDenseGemmSharedBytes);
  EXPECT_EQ(s.launch(512).grid[0], 4u);
  EXPECT_EQ(s.launch(512).grid[1], 32u);
}

}  // namespace
}  // namespace rayo::cuda
