// The dense f16 GEMM (gemm_dense.cu) on the SIMT emulator, launched as its
// spec says, against float64 products of the same f16 values: partial row and
// token tiles, more K tiles than stages (the ring of stages wraps), fewer K
// tiles than stages, and blocks past the step's rows that must return.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "support/simt/simt.h"
#include "backends/cuda/kernel_specs.h"
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/mma.cuh"

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

#include "common/error.h"
#include "common/half.h"
#include "common/strings.h"
#include "support/simt/kernel_test_util.h"
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
// tensor-core steps.
void check_dense(int64_t M, int64_t K, int64_t T, DenseKernel kernel, uint32_t seed) {
  SCOPED_TRACE(cat("M=", M, " K=", K, " tokens=", T));
  const auto w = random_halves(M * K, seed), x = random_halves(T * K, seed + 1);
  std::vector<float> y((T + 2) * M, -12345.0f);
  const int n = static_cast<int>(T);
  const KernelSpec spec = dense_gemm_spec(M, K);
  // Launched for a graph of a token block more than the step: those blocks must return.
  test::launch(spec, T + kDenseGemmTokens, kernel, DenseGemmArgs{w.data(), x.data(), y.data(), &n});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t r = 0; r < M; ++r) {
      double ref = 0, abs_sum = 0;
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

TEST(CudaEmulatedDenseGemm, MatchesTheProductOfItsHalves) {
  // Two row tiles (the second of 72 rows), five K tiles through four stages,
  // two token tiles (the second of 22 tokens).
  check_dense(200, 160, 150, dense_200x160::gemm_dense, 1);
  // One K tile (the prologue's other stages stay empty), one token.
  check_dense(128, 32, 1, dense_128x32::gemm_dense, 2);
}

TEST(CudaEmulatedDenseGemm, SpecRefusesKThatIsNotAMultipleOf32) {
  EXPECT_THROW(dense_gemm_spec(128, 48), Error);
  const KernelSpec s = dense_gemm_spec(4096, 14336);
  EXPECT_EQ(s.dynamic_shared, kDenseGemmSharedBytes);
  EXPECT_EQ(s.launch(512).grid[0], 4u);
  EXPECT_EQ(s.launch(512).grid[1], 32u);
}

}  // namespace
}  // namespace rayo::cuda
