// The CPU's elementwise ops on every instruction set the machine has: SwiGLU's
// vectorized e^x against the double-precision formula, over the whole range a
// gate can take (both ends of the clamp included) and at row lengths whose
// last values take the scalar path.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <algorithm>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/encoder_decoder_ops.h"
#include "backends/cpu/ops.h"

namespace rayo::cpu {
namespace {

double silu_times(double g, double u) { return g / (1.0 + std::exp(-g)) * u; }

TEST(CpuOps, SwigluOnEveryInstructionSetIsWithinFourUlpOfDouble) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> wide(-120.0f, 120.0f), near(-6.0f, 6.0f);
  const Isa saved = active_isa();
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (!isa_supported(isa)) continue;
    set_active_isa(isa);
    SCOPED_TRACE(isa_name(isa));
    for (int64_t n : {1, 7, 8, 13, 896, 4867}) {
      std::vector<float> gate(n), up(n), y(n);
      for (int64_t i = 0; i < n; ++i) {
        gate[i] = i % 3 == 0 ? wide(rng) : near(rng);
        up[i] = near(rng);
      }
      gate[0] = -87.0f;  // e^87 is near the top of the clamp
      if (n > 1) gate[1] = 88.0f;
      if (n > 2) gate[2] = 0.0f;
      swiglu_row(gate.data(), up.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double want = silu_times(gate[i], up[i]);
        // Past -87 the vector path clamps e^-g (silu ~ g e^g is below 1e-36 there).
        const double tol = 4 * std::numeric_limits<float>::epsilon() * std::abs(want) + 1e-35;
        ASSERT_NEAR(y[i], want, tol) << "n " << n << ", gate " << gate[i] << ", up " << up[i];
      }
    }
  }
  set_active_isa(saved);
}

// The vectorized maximum and argmax (attention's softmax, Whisper's greedy
// choice over 51 864 logits) give std::max_element's value and its first
// index, ties and -inf included, at lengths that end in every tail.
TEST(CpuOps, RowMaxAndArgmaxAreMaxElementsOnEveryInstructionSet) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  const Isa saved = active_isa();
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (!isa_supported(isa)) continue;
    set_active_isa(isa);
    SCOPED_TRACE(isa_name(isa));
    for (int64_t n : {1, 5, 8, 9, 31, 32, 33, 71, 1500, 51864}) {
      for (int trial = 0; trial < 4; ++trial) {
        std::vector<float> x(n);
        for (float& v : x) v = trial == 3 ? -std::numeric_limits<float>::infinity() : nd(rng);
        if (trial == 1) x[n - 1] = 100.0f;                        // the maximum in the tail
        if (trial == 2) x[n / 3] = x[n - 1] = x[n / 2] = 50.0f;   // ties: the first one wins
        const auto want = std::max_element(x.begin(), x.end());
        EXPECT_EQ(row_max(x.data(), n), *want) << "n " << n << " trial " << trial;
        EXPECT_EQ(row_argmax(x.data(), n), want - x.begin()) << "n " << n << " trial " << trial;
      }
    }
  }
  set_active_isa(saved);
}

}  // namespace
}  // namespace rayo::cpu
