#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "backends/cpu/cpu_features.h"
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

TEST(Sampler, NextUniformIsTheTop24BitsOfOneGeneratorWord) {
  SamplingParams p = untruncated(77);
  Sampler s(p, 4);
  std::mt19937 reference(77);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t word = static_cast<uint32_t>(reference());
    const float u = s.next_uniform();
    ASSERT_EQ(u, static_cast<float>(word >> 8) / 16777216.0f);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
  }
  EXPECT_EQ(uniform_from_bits(0), 0.0f);
  EXPECT_EQ(uniform_from_bits(0xFFFFFFFFu), 1.0f - 0x1p-24f);
  EXPECT_EQ(uniform_from_bits(0x80000000u), 0.5f);
}

// sample() is sample_with_uniform with penalties() and one next_uniform() per
// sampled token: a second sampler with the same seed, drawing u itself,
// reproduces every token.
TEST(Sampler, SampleIsSampleWithUniformOfTheNextDraw) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = 20;
  p.top_p = 0.9f;
  p.min_p = 0.02f;
  p.repeat_penalty = 1.2f;
  p.frequency_penalty = 0.1f;
  p.repeat_last_n = 16;
  p.seed = 2024;
  const int64_t V = 300;
  Sampler a(p, V), b(p, V);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(V);
  std::set<int32_t> seen;
  for (int step = 0; step < 300; ++step) {
    for (auto& l : logits) l = normal(rng);
    const int32_t expected = sample_with_uniform(logits, p, b.penalties(), b.next_uniform());
    const int32_t got = a.sample(logits);
    ASSERT_EQ(got, expected) << "step " << step;
    ASSERT_EQ(a.penalties(), b.penalties());
    a.accept(got);
    b.accept(got);
    seen.insert(got);
  }
  EXPECT_GT(seen.size(), 50u);
}

TEST(Sampler, GreedySamplingDrawsNoRandomNumber) {
  SamplingParams p = untruncated(31);
  p.temperature = 0.0f;
  Sampler s(p, 3);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(s.sample(logits_of({0.0f, 2.0f, 1.0f})), 1);
  std::mt19937 reference(31);
  EXPECT_EQ(s.next_uniform(), uniform_from_bits(static_cast<uint32_t>(reference())));
}

TEST(Sampler, PenaltiesAreTheWindowsCountsInTokenOrder) {
  SamplingParams p;
  p.repeat_penalty = 1.1f;
  p.repeat_last_n = 5;
  Sampler s(p, 10);
  EXPECT_TRUE(s.penalties().empty());
  for (int32_t t : {7, 3, 9, 3, 12, 7, -1, 3}) s.accept(t);  // window: 3 12 7 -1 3
  const std::vector<PenaltyEntry> expected = {{3, 2}, {7, 1}};  // 12 and -1 are not tokens of 10
  EXPECT_EQ(s.penalties(), expected);
  SamplingParams off = p;
  off.repeat_penalty = 1.0f;
  Sampler t(off, 10);
  t.accept(3);
  EXPECT_TRUE(t.penalties().empty()) << "no penalty parameter set";
  SamplingParams no_window = p;
  no_window.repeat_last_n = 0;
  Sampler w(no_window, 10);
  w.accept(3);
  EXPECT_TRUE(w.penalties().empty()) << "repeat_last_n 0";
  s.reset_history();
  EXPECT_TRUE(s.penalties().empty());
}

// The draw walks the weights in order: index i takes the part
// [w_0 + ... + w_{i-1}, w_0 + ... + w_i) of [0, total) that u * total falls in.
TEST(Sampler, PickByUniformIsTheInverseCdf) {
  const std::vector<float> w = {1.0f, 2.0f, 1.0f};  // total 4: [0,1) [1,3) [3,4)
  EXPECT_EQ(pick_by_uniform(w, 0.0f), 0u);
  EXPECT_EQ(pick_by_uniform(w, 0.2499f), 0u);
  EXPECT_EQ(pick_by_uniform(w, 0.25f), 1u);
  EXPECT_EQ(pick_by_uniform(w, 0.7499f), 1u);
  EXPECT_EQ(pick_by_uniform(w, 0.75f), 2u);
  EXPECT_EQ(pick_by_uniform(w, 1.0f - 0x1p-24f), 2u);
  const std::vector<float> zeros = {0.0f, 3.0f, 0.0f};  // zero weights are never drawn
  EXPECT_EQ(pick_by_uniform(zeros, 0.0f), 1u);
  EXPECT_EQ(pick_by_uniform(zeros, 1.0f - 0x1p-24f), 1u);
  const std::vector<float> nan = {1.0f, 2.0f, NAN};  // the target is never reached
  EXPECT_EQ(pick_by_uniform(nan, 0.5f), 1u);
}

// The candidate order the draw walks: the top-k by (logit desc, id asc), or
// every token in id order when top-k is off.
TEST(Sampler, SampleWithUniformWalksTheCandidateOrder) {
  SamplingParams p = untruncated(0);
  p.top_k = 3;
  const auto l = logits_of({0.0f, 3.0f, 1.0f, 3.0f, 2.0f});  // top 3: ids 1, 3 (tie: lower id first), 4
  // weights 1, 1, e^-1: total 2.368; ids 1 | 3 | 4 from u * total = 1 and 2.
  EXPECT_EQ(sample_with_uniform(l, p, {}, 0.0f), 1);
  EXPECT_EQ(sample_with_uniform(l, p, {}, 0.4f), 1);
  EXPECT_EQ(sample_with_uniform(l, p, {}, 0.45f), 3);
  EXPECT_EQ(sample_with_uniform(l, p, {}, 0.84f), 3);
  EXPECT_EQ(sample_with_uniform(l, p, {}, 0.85f), 4);
  p.top_k = 0;  // id order: weights e^-3, 1, e^-2, 1, e^-1
  EXPECT_EQ(sample_with_uniform(l, p, {}, 0.0f), 0);
  EXPECT_EQ(sample_with_uniform(l, p, {}, 0.99f), 4);
  // Penalties come first: token 1 penalised below token 3's logit.
  p.top_k = 1;
  p.presence_penalty = 0.5f;
  const std::vector<PenaltyEntry> seen = {{1, 1}, {7, 4}};  // 7 is not a token of 5: ignored
  EXPECT_EQ(sample_with_uniform(l, p, seen, 0.0f), 3);
  p.temperature = 0.0f;
  EXPECT_EQ(sample_with_uniform(l, p, seen, 0.0f), 3);
  EXPECT_THROW(sample_with_uniform(l, p, seen, 1.0f), Error);
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

// A token's log-probability and the top ones, on every instruction set, over a
// vocabulary of Qwen 2.5's size with masked (-inf) entries and a length whose
// last values take the scalar path: within 1e-5 of the log-softmax in double.
TEST(Sampler, TokenLogprobsAreTheLogSoftmaxOnEveryInstructionSet) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  std::vector<float> logits(151937);
  for (float& l : logits) l = nd(rng);
  logits[17] = -std::numeric_limits<float>::infinity();
  logits[40000] = 30.0f;
  logits[151936] = 29.5f;
  double max = -INFINITY, sum = 0;
  for (float l : logits) max = std::max(max, static_cast<double>(l));
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max);
  const double lse = max + std::log(sum);
  const cpu::Isa saved = cpu::active_isa();
  for (cpu::Isa isa : {cpu::Isa::Scalar, cpu::Isa::Avx2, cpu::Isa::Avx512}) {
    if (!cpu::isa_supported(isa)) continue;
    cpu::set_active_isa(isa);
    SCOPED_TRACE(cpu::isa_name(isa));
    for (int32_t id : {0, 40000, 151936}) {
      const GeneratedToken g = token_logprobs(id, logits, 3);
      EXPECT_EQ(g.id, id);
      EXPECT_NEAR(g.logprob, logits[id] - lse, 1e-5);
      ASSERT_EQ(g.top.size(), 3u);
      EXPECT_EQ(g.top[0].id, 40000);
      EXPECT_EQ(g.top[1].id, 151936);
      EXPECT_NEAR(g.top[0].logprob, 30.0 - lse, 1e-5);
      EXPECT_NEAR(g.top[1].logprob, 29.5 - lse, 1e-5);
    }
    EXPECT_EQ(token_logprobs(17, logits, 0).logprob, -std::numeric_limits<float>::infinity());
  }
  cpu::set_active_isa(saved);
}

}  // namespace
}  // namespace rayo::runtime
