#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "common/error.h"
#include "runtime/sampler.h"

namespace rayo::runtime {
namespace {

std::vector<float> logits_of(std::initializer_list<float> l) { return std::vector<float>(l); }

// Sampling from the plain softmax, no truncation; tests then set the one
// filter they exercise.
SamplingParams untruncated(uint32_t seed) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

TEST(Sampler, ZeroTemperatureIsArgmax) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p, 5);
  EXPECT_EQ(s.sample(logits_of({0.1f, 2.0f, 1.9f, -1.0f, 0.0f})), 1);
  EXPECT_EQ(argmax(logits_of({3, 1, 3})), 0) << "first index wins ties";
}

TEST(Sampler, TopKOfOneIsArgmaxAtAnyTemperature) {
  SamplingParams p;
  p.temperature = 5.0f;
  p.top_k = 1;
  p.seed = 7;
  Sampler s(p, 4);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(logits_of({0.0f, 0.5f, 0.4f, 0.1f})), 1);
}

TEST(Sampler, SameSeedSameDraws) {
  const SamplingParams p = untruncated(1234);
  Sampler a(p, 6), b(p, 6);
  const auto l = logits_of({0, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f});
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.sample(l), b.sample(l));
}

TEST(Sampler, DrawsFollowTheSoftmax) {
  const SamplingParams p = untruncated(99);
  Sampler s(p, 2);
  // p(1) = e / (1 + e) = 0.731
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ones += s.sample(logits_of({0.0f, 1.0f})) == 1;
  EXPECT_NEAR(ones / static_cast<double>(n), 0.731, 0.02);
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
  SamplingParams p = untruncated(3);
  p.min_p = 0.5f;  // keeps tokens with p >= 0.5 * p_max: logit >= max - ln 2
  Sampler s(p, 3);
  for (int i = 0; i < 200; ++i) EXPECT_NE(s.sample(logits_of({1.0f, 0.0f, 0.9f})), 1);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingTheMass) {
  SamplingParams p = untruncated(5);
  p.top_p = 0.5f;  // token 0 alone has p = 0.84 > 0.5
  Sampler s(p, 3);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(s.sample(logits_of({2.0f, 0.0f, 0.0f})), 0);
}

// Without top-k the sampler sorts only the prefix top-p needs, growing it from
// 64: here the nucleus is ~270 tokens of a shuffled 2000-token vocabulary.
TEST(Sampler, TopPWithoutTopKFindsALargeNucleus) {
  std::vector<float> logits(2000, -30.0f);
  std::vector<int> order(2000);
  for (int i = 0; i < 2000; ++i) order[i] = (i * 769) % 2000;  // a permutation (769 is prime to 2000)
  for (int r = 0; r < 300; ++r) logits[order[r]] = -0.001f * static_cast<float>(r);  // rank r
  // The nucleus by brute force: the smallest prefix of the ranking with mass >= 0.9.
  double total = 0;
  for (float l : logits) total += std::exp(static_cast<double>(l));
  double cum = 0;
  int nucleus = 0;
  while (cum < 0.9 * total) cum += std::exp(static_cast<double>(logits[order[nucleus++]]));
  ASSERT_GT(nucleus, 256);  // past the first two prefix sizes (64, 256)
  std::map<int, int> rank_of;
  for (int r = 0; r < 2000; ++r) rank_of[order[r]] = r;

  SamplingParams p = untruncated(11);
  p.top_p = 0.9f;
  Sampler s(p, 2000);
  int deepest = 0;
  for (int i = 0; i < 2000; ++i) {
    const int rank = rank_of[s.sample(logits)];
    ASSERT_LT(rank, nucleus) << "drew a token outside the nucleus";
    deepest = std::max(deepest, rank);
  }
  EXPECT_GT(deepest, 256) << "never drew from the deep part of the nucleus";
}

TEST(Sampler, RepeatPenaltyChangesTheGreedyChoice) {
  SamplingParams p;
  p.temperature = 0;
  p.repeat_penalty = 2.0f;  // 3.0 -> 1.5 for a token already seen
  Sampler s(p, 3);
  const auto l = logits_of({3.0f, 2.0f, 0.0f});
  EXPECT_EQ(s.sample(l), 0);
  s.accept(0);
  EXPECT_EQ(s.sample(l), 1);
}

TEST(Sampler, PresenceAndFrequencyPenalties) {
  SamplingParams p;
  p.temperature = 0;
  p.frequency_penalty = 0.4f;
  Sampler s(p, 2);
  const auto l = logits_of({1.0f, 0.5f});
  s.accept(0);
  EXPECT_EQ(s.sample(l), 0);  // 1.0 - 0.4 = 0.6 > 0.5
  s.accept(0);
  EXPECT_EQ(s.sample(l), 1);  // 1.0 - 0.8 = 0.2 < 0.5
  SamplingParams q;
  q.temperature = 0;
  q.presence_penalty = 0.6f;
  Sampler t(q, 2);
  t.accept(0);
  t.accept(0);
  EXPECT_EQ(t.sample(l), 1);  // 1.0 - 0.6 (once) = 0.4 < 0.5
}

TEST(Sampler, RejectsOutOfRangeParameters) {
  SamplingParams p;
  p.top_p = 1.5f;
  EXPECT_THROW(Sampler(p, 4), Error);
  p = {};
  p.min_p = -0.1f;
  EXPECT_THROW(Sampler(p, 4), Error);
  p = {};
  p.repeat_penalty = 0.0f;
  EXPECT_THROW(Sampler(p, 4), Error);
  p = {};
  p.repeat_last_n = -5;
  EXPECT_THROW(Sampler(p, 4), Error);
}

}  // namespace
}  // namespace rayo::runtime
