// The dense attention kernel (Whisper's encoder self-attention and decoder
// cross-attention) against a float64 reference on every instruction set, and
// its promise that an output row has the same bits whatever rows are computed
// beside it: a block of 1 to 9 queries (greedy decoding's one, a beam search's
// five, a full tile and more) picks different register tiles, and a beam's
// text must not depend on how many beams share its window.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/dense_attention.h"

namespace rayo::cpu {
namespace {

struct Sequence {
  int64_t len;
  int head_dim;
  std::vector<float> q, k, v;
};

Sequence make_sequence(int64_t len, int head_dim) {
  Sequence s{len, head_dim, {}, {}, {}};
  std::mt19937 rng(static_cast<uint32_t>(len * 7 + head_dim));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto* x : {&s.q, &s.k, &s.v}) {
    x->resize(len * head_dim);
    for (float& f : *x) f = nd(rng);
  }
  return s;
}

// Output rows [r0, r1) of the head, computed in one call.
std::vector<float> attend(const Sequence& s, int64_t r0, int64_t r1) {
  std::vector<float> out(s.len * s.head_dim, NAN);
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  const DenseHead h{s.q.data(), s.k.data(), s.v.data(), out.data(), s.head_dim, s.len, s.head_dim, scale};
  std::vector<float> kt(s.head_dim * dense_padded_len(s.len)), scores((r1 - r0) * dense_padded_len(s.len));
  pack_keys_transposed(h, kt.data());
  dense_attention_rows(h, kt.data(), r0, r1, scores.data());
  return out;
}

std::vector<double> reference_row(const Sequence& s, int64_t i) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  std::vector<double> p(s.len);
  double top = -INFINITY, sum = 0.0;
  for (int64_t j = 0; j < s.len; ++j) {
    double dot = 0.0;
    for (int d = 0; d < s.head_dim; ++d) dot += double{s.q[i * s.head_dim + d]} * s.k[j * s.head_dim + d];
    p[j] = dot * scale;
    top = std::max(top, p[j]);
  }
  for (double& x : p) sum += (x = std::exp(x - top));
  std::vector<double> out(s.head_dim, 0.0);
  for (int64_t j = 0; j < s.len; ++j)
    for (int d = 0; d < s.head_dim; ++d) out[d] += p[j] / sum * s.v[j * s.head_dim + d];
  return out;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
    if (isa_supported(isa)) isas.push_back(isa);
  return isas;
}

class CpuDenseAttention : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = active_isa(); }
  void TearDown() override { set_active_isa(saved_); }
  Isa saved_ = Isa::Scalar;
};

TEST_F(CpuDenseAttention, BlocksOfOneToNineRowsMatchTheReference) {
  for (const auto& [len, head_dim] : {std::pair<int64_t, int>{1500, 64}, {37, 16}, {100, 80}}) {
    const Sequence s = make_sequence(len, head_dim);
    for (Isa isa : supported_isas()) {
      set_active_isa(isa);
      for (int64_t rows = 1; rows <= 9; ++rows) {
        SCOPED_TRACE(::testing::Message() << isa_name(isa) << ", " << len << " positions, heads of " << head_dim
                                          << ", " << rows << " rows");
        const int64_t r0 = len / 3;
        const std::vector<float> got = attend(s, r0, r0 + rows);
        for (int64_t i = r0; i < r0 + rows; ++i) {
          const std::vector<double> want = reference_row(s, i);
          for (int d = 0; d < head_dim; ++d)
            ASSERT_NEAR(got[i * head_dim + d], want[d], 1e-5) << "row " << i << ", value " << d;
        }
        // Nothing outside the block is written.
        EXPECT_TRUE(std::isnan(got[(r0 - 1) * head_dim])) << "row before the block";
        EXPECT_TRUE(std::isnan(got[(r0 + rows) * head_dim])) << "row after the block";
      }
    }
  }
}

TEST_F(CpuDenseAttention, ARowHasTheSameBitsWhateverRowsAreComputedBesideIt) {
  const Sequence s = make_sequence(1500, 64);
  const int64_t first = 200;
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    std::vector<float> alone(9 * 64);
    for (int64_t i = 0; i < 9; ++i) {
      const std::vector<float> one = attend(s, first + i, first + i + 1);
      std::memcpy(alone.data() + i * 64, one.data() + (first + i) * 64, 64 * sizeof(float));
    }
    for (int64_t rows = 2; rows <= 9; ++rows) {
      const std::vector<float> got = attend(s, first, first + rows);
      for (int64_t i = 0; i < rows; ++i)
        for (int d = 0; d < 64; ++d)
          ASSERT_EQ(got[(first + i) * 64 + d], alone[i * 64 + d])
              << isa_name(isa) << ", block of " << rows << ", row " << i << ", value " << d;
    }
  }
}

}  // namespace
}  // namespace rayo::cpu
