// The device sampling kernel (kernels/sample.cu) runs through the SIMT
// emulator against the CPU's runtime::sample_with_uniform.
//
// Agreement is asserted exactly, for every row: the kernel does the CPU's
// float and double operations in the CPU's order, and compiled for the
// emulator it calls the host's expf, the one function whose last bit the
// GPU may round differently (the native test, tests/gpu, allows for that).
// A row that selects, sorts or cuts wrongly draws another token for some u,
// so the cases below sweep u over every candidate where that matters.
#include <gtest/gtest.h>

#include "support/simt/simt.h"
// Shape-independent kernel headers at global scope, before the namespaced
// kernel variants (their include guards keep them there).
#include "backends/cuda/kernels/common.cuh"
#include "cuda_emulated_sampling_variants.inc"

#include <cmath>
#include <cstring>
#include <set>

#include "common/error.h"
#include "common/strings.h"
#include "backends/cuda/device_sampling.h"
#include "support/sampling_cases.h"
#include "support/simt/spec_launch.h"

namespace rayo::cuda {
namespace {

using runtime::PenaltyEntry;
using runtime::SamplingParams;
using test::SamplingCase;

using SampleKernel = void (*)(SampleArgs);

// Runs `kernel` (block `threads`) over the cases with a grid of `grid_rows`
// blocks and *n_rows = n_rows; returns ids (rows past n_rows keep -7).
std::vector<int> run_kernel(SampleKernel kernel, unsigned threads, const std::vector<SamplingCase>& cases,
                            int64_t n_vocab, int n_rows = -1, std::vector<float>* scratch_out = nullptr) {
  if (n_rows < 0) n_rows = static_cast<int>(cases.size());
  const test::PackedCases in = test::pack_cases(cases, n_vocab);
  std::vector<float> scratch(cases.size() * n_vocab, 12345.0f);
  std::vector<int> ids(cases.size(), -7);
  KernelSpec spec = sample_kernel_spec(n_vocab);
  spec.block = threads;  // the variant's SAMPLE_THREADS
  test::launch(spec, static_cast<int64_t>(cases.size()), kernel,
               SampleArgs{in.logits.data(), scratch.data(), in.rows.records.data(), in.rows.pairs.data(), ids.data(),
                          &n_rows});
  if (scratch_out) *scratch_out = scratch;
  return ids;
}

// Every row's id equals the CPU's.
void expect_cpu_ids(SampleKernel kernel, unsigned threads, const std::vector<SamplingCase>& cases, int64_t n_vocab) {
  const std::vector<int> ids = run_kernel(kernel, threads, cases, n_vocab);
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& p = cases[i].params;
    EXPECT_EQ(ids[i], test::cpu_sample(cases[i]))
        << "row " << i << ": temp " << p.temperature << " top_k " << p.top_k << " top_p " << p.top_p << " min_p "
        << p.min_p << " penalties " << cases[i].penalties.size() << " u " << cases[i].u;
  }
}

SamplingParams sampled(float temperature, int top_k, float top_p = 1.0f, float min_p = 0.0f) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  return p;
}

std::vector<float> smooth_logits(int64_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> l(n_vocab);
  for (auto& x : l) x = normal(rng);
  return l;
}

TEST(CudaEmulatedSampling, GreedyTakesTheLowestIdOfTheLargestPenalisedLogit) {
  const int64_t V = 2048;
  std::vector<SamplingCase> cases;
  // Ties at the maximum: the first one wins.
  std::vector<float> ties(V, -1.0f);
  for (int id : {1900, 700, 701, 1500}) ties[id] = 3.5f;
  cases.push_back({ties, sampled(0.0f, 40), {}, 0.3f});
  // -0 and +0 are equal: the lower id wins whichever is which.
  std::vector<float> zeros(V, -2.0f);
  zeros[900] = 0.0f, zeros[31] = -0.0f;
  cases.push_back({zeros, sampled(0.0f, 0), {}, 0.0f});
  zeros[900] = -0.0f, zeros[31] = 0.0f;
  cases.push_back({zeros, sampled(0.0f, 0), {}, 0.0f});
  // A repeat penalty demotes the maximum (positive: divided) ...
  std::vector<float> l = smooth_logits(V, 3);
  l[77] = 9.0f, l[1234] = 8.0f;
  SamplingParams rp = sampled(0.0f, 40);
  rp.repeat_penalty = 1.5f;
  cases.push_back({l, rp, {{77, 1}}, 0.0f});
  // ... and a presence/frequency penalty pushes it below a negative token's level.
  std::vector<float> neg(V, -6.0f);
  neg[5] = -1.0f, neg[6] = -1.5f;
  SamplingParams fp = sampled(-1.0f, 0);
  fp.frequency_penalty = 0.3f, fp.presence_penalty = 0.1f, fp.repeat_penalty = 1.1f;
  cases.push_back({neg, fp, {{5, 2}, {6, 0}}, 0.0f});
  // top_k of 1 at any temperature is the same argmax.
  cases.push_back({ties, sampled(1.3f, 1), {}, 0.9f});
  const std::vector<int> ids = run_kernel(sample_2048::sample, 1024, cases, V);
  EXPECT_EQ(ids[0], 700);
  EXPECT_EQ(ids[1], 31);
  EXPECT_EQ(ids[2], 31);
  EXPECT_EQ(ids[3], 1234);  // 9 / 1.5 = 6 < 8
  EXPECT_EQ(ids[4], 6);     // -1 * 1.1 - 0.6 - 0.1 = -1.8 < -1.5 (count 0: presence only)
  EXPECT_EQ(ids[5], 700);
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(ids[i], test::cpu_sample(cases[i])) << i;
}

// Equal logits (0) across the top-k boundary, a few larger ones (0.5) above
// it: the k kept are the larger ones and then the lowest ids of the tied, and
// a sweep of u over [0, 1) draws each of them and nothing else. Without larger
// ones the weights are equal and u = (j + 0.5) / k draws candidate j itself.
// `points` = {parts, j...}: u at the middle of part j of [0, 1) cut in `parts`.
void check_tie_sweep(SampleKernel kernel, unsigned threads, int64_t V, int k, const std::vector<int>& above,
                     const std::vector<int>& points) {
  SCOPED_TRACE(cat("vocabulary ", V, " top_k ", k, " above ", above.size()));
  std::vector<float> l(V, 0.0f);
  std::set<int> expected(above.begin(), above.end());
  for (int id : above) l[id] = 0.5f;
  for (int id = 0; static_cast<int>(expected.size()) < k; ++id) expected.insert(id);
  // u at the middle of the j-th of `points` equal parts of [0, 1), for each listed j.
  const int parts = points.front();
  std::vector<SamplingCase> cases;
  for (size_t i = 1; i < points.size(); ++i)
    cases.push_back({l, sampled(1.0f, k), {}, (static_cast<float>(points[i]) + 0.5f) / static_cast<float>(parts)});
  const std::vector<int> ids = run_kernel(kernel, threads, cases, V);
  std::set<int> drawn;
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_EQ(ids[i], test::cpu_sample(cases[i])) << "u " << cases[i].u;
    if (above.empty() && parts == k) {
      EXPECT_EQ(ids[i], points[i + 1]) << "candidate " << points[i + 1];  // equal weights: u picks candidate j
    }
    drawn.insert(ids[i]);
  }
  if (static_cast<int>(cases.size()) == parts) {
    EXPECT_EQ(drawn, expected);  // a sweep of all of [0, 1) draws each kept token, and only those
  }
}

// Every part of [0, 1) split in n.
std::vector<int> sweep(int n) {
  std::vector<int> v = {n};
  for (int j = 0; j < n; ++j) v.push_back(j);
  return v;
}

TEST(CudaEmulatedSampling, TiesAtTheTopKBoundaryKeepTheLowestIds) {
  // Each candidate's weight is at least 0.61 / (3 + 13 * 0.61) = 5.4% of the
  // total (0.61 = e^-0.5): a sweep of 24 points (4.2% apart) hits every one.
  check_tie_sweep(sample_2048_t128::sample, 128, 2048, 16, {2047, 1000, 3}, sweep(24));
  check_tie_sweep(sample_2048_t128::sample, 128, 2048, 24, {}, sweep(24));
  // At least 0.61 / (2 + 5 * 0.61) = 12%: 10 points.
  check_tie_sweep(sample_512::sample, 1024, 512, 7, {500, 5}, sweep(10));
  check_tie_sweep(sample_2048::sample, 1024, 2048, 40, {}, {40, 0, 13, 39});
  // Every float byte ties: the selection resolves the id's bytes too (a
  // vocabulary of 50257 is slow to emulate: two rows).
  check_tie_sweep(sample_50257::sample, 1024, 50257, 40, {}, {40, 0, 39});
}

TEST(CudaEmulatedSampling, TopKTopPMinPTemperaturesAndUniforms) {
  struct Grid {
    SampleKernel kernel;
    unsigned threads;
    int64_t V;
    std::vector<float> temperatures, uniforms;
  };
  // The full grid on the narrow block, a smaller one on the production block.
  for (const Grid& g : {Grid{sample_2048_t128::sample, 128, 2048, {0.4f, 1.0f, 2.5f}, {0.0f, 0.37f, 1.0f - 0x1p-24f}},
                        Grid{sample_512::sample, 1024, 512, {1.0f}, {0.0f, 0.999f}}}) {
    SCOPED_TRACE(cat("vocabulary ", g.V, " block ", g.threads));
    std::vector<SamplingCase> cases;
    const std::vector<float> l = smooth_logits(g.V, 11 + static_cast<uint32_t>(g.V));
    for (int k : {1, 40, 1024})
      for (float top_p : {1.0f, 0.9f, 0.3f})
        for (float min_p : {0.0f, 0.1f})
          for (float temp : g.temperatures)
            for (float u : g.uniforms) cases.push_back({l, sampled(temp, k, top_p, min_p), {}, u});
    expect_cpu_ids(g.kernel, g.threads, cases, g.V);
    // Not vacuous: the rows draw many different tokens.
    std::set<int> distinct;
    for (const auto& c : cases) distinct.insert(test::cpu_sample(c));
    EXPECT_GT(distinct.size(), g.V == 2048 ? 15u : 5u);
  }
}

TEST(CudaEmulatedSampling, PenaltiesOnPositiveAndNegativeLogits) {
  const int64_t V = 2048;
  std::vector<float> l = smooth_logits(V, 21);
  l[10] = 20.0f, l[11] = 19.9f, l[12] = -0.5f, l[13] = 19.5f;  // far above the rest
  std::vector<SamplingCase> cases;
  const std::vector<PenaltyEntry> window = {{3, 1}, {10, 4}, {11, 1}, {12, 2}, {13, 3}, {2047, 1}};
  for (float repeat : {1.0f, 1.3f})
    for (float presence : {0.0f, 0.5f})
      for (float frequency : {0.0f, 0.25f})
        for (float u : {0.0f, 0.5f, 0.95f}) {
          SamplingParams p = sampled(0.8f, 40, 0.95f, 0.02f);
          p.repeat_penalty = repeat, p.presence_penalty = presence, p.frequency_penalty = frequency;
          cases.push_back({l, p, window, u});
        }
  std::vector<float> scratch;
  const std::vector<int> ids = run_kernel(sample_2048_t128::sample, 128, cases, V, -1, &scratch);
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(ids[i], test::cpu_sample(cases[i])) << i;
  // The penalised copy of a row with penalties is the CPU's (the first 3 rows have none).
  EXPECT_EQ(scratch[0], 12345.0f);
  const size_t row = cases.size() - 1;  // all three penalties
  EXPECT_EQ(scratch[row * V + 10], 20.0f / 1.3f - (4 * 0.25f + 0.5f));
  EXPECT_EQ(scratch[row * V + 12], -0.5f * 1.3f - (2 * 0.25f + 0.5f));
  EXPECT_EQ(scratch[row * V + 500], l[500]);
  // The penalties change what is drawn: at u = 0 the first candidate, 10
  // unpenalised; 11 (19.9 / 1.3 - 0.75 = 14.56 > 20 / 1.3 - 1.5 = 13.88) with all three.
  EXPECT_EQ(ids[0], 10);
  EXPECT_EQ(ids[cases.size() - 3], 11);
}

TEST(CudaEmulatedSampling, RowsPastTheStepCountAreUntouchedAndHostRowsGetMinusOne) {
  const int64_t V = 512;
  std::vector<SamplingCase> cases;
  SamplingParams pen = sampled(1.0f, 40);
  pen.repeat_penalty = 1.2f;
  for (int i = 0; i < 5; ++i) cases.push_back({smooth_logits(V, 30 + i), pen, {{i, 1}}, 0.5f});
  cases[1].params.top_k = 0;     // the host's: every token, through a top-p
  cases[1].params.top_p = 0.9f;
  cases[2].params.top_k = 1025;  // the host's: above K_MAX
  std::vector<float> scratch;
  const std::vector<int> ids = run_kernel(sample_512::sample, 1024, cases, V, 3, &scratch);
  EXPECT_EQ(ids[0], test::cpu_sample(cases[0]));
  EXPECT_EQ(ids[1], -1);
  EXPECT_EQ(ids[2], -1);
  EXPECT_EQ(ids[3], -7);
  EXPECT_EQ(ids[4], -7);
  for (int64_t i = 3 * V; i < 5 * V; ++i) ASSERT_EQ(scratch[i], 12345.0f) << i;
}

TEST(CudaEmulatedSampling, EveryTokenInIdOrderWhenTopKCoversTheVocabulary) {
  // V = 512 <= K_MAX: top_k 600 keeps all tokens unsorted, so the draw walks
  // them in id order (a sorted walk would draw other tokens for the same u).
  const int64_t V = 512;
  const std::vector<float> l = smooth_logits(V, 41);
  std::vector<SamplingCase> cases;
  for (float min_p : {0.0f, 0.05f})
    for (float top_p : {1.0f, 0.8f})
      for (float u : {0.0f, 0.2f, 0.5f, 0.8f, 1.0f - 0x1p-24f}) cases.push_back({l, sampled(1.0f, 600, top_p, min_p), {}, u});
  expect_cpu_ids(sample_512::sample, 1024, cases, V);
  // u = 0 takes the first token of id order, not the largest logit.
  EXPECT_EQ(test::cpu_sample(cases[0]), 0);
}

// top_k 0 with top_p 1 and min_p 0 (OpenAI's defaults) on a vocabulary past
// K_MAX: every token in id order, on the device, summed a run of ids per
// thread; u at both ends, zero weights at the start and the end, ties, a
// temperature that flattens the row and one that sharpens it, penalties.
TEST(CudaEmulatedSampling, EveryTokenOfALargeVocabularyInIdOrder) {
  const int64_t V = 2048;
  std::vector<float> l = smooth_logits(V, 71);
  std::vector<float> edges = l;
  for (int i = 0; i < 100; ++i) edges[i] = edges[V - 1 - i] = -INFINITY;  // only ids 100..1947 can be drawn
  std::vector<float> ties(V);
  for (int64_t i = 0; i < V; ++i) ties[i] = static_cast<float>(i % 5);
  std::vector<SamplingCase> cases;
  for (const auto* row : {&l, &edges, &ties})
    for (float t : {0.3f, 1.0f, 1.9f})
      for (float u : {0.0f, 0x1p-24f, 0.37f, 0.999f, 1.0f - 0x1p-24f}) cases.push_back({*row, sampled(t, 0), {}, u});
  SamplingParams pen = sampled(0.8f, 0);
  pen.repeat_penalty = 1.3f;
  pen.frequency_penalty = 0.2f;
  cases.push_back({l, pen, {{5, 2}, {700, 1}, {2047, 3}}, 0.6f});
  for (const auto& c : cases) ASSERT_GE(test::cpu_sample(c), 0) << "the device's row";
  const std::vector<int> ids = run_kernel(sample_2048::sample, 1024, cases, V);
  std::set<int> distinct;
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(ids[i], test::cpu_sample(cases[i])) << i;
    distinct.insert(ids[i]);
  }
  for (size_t i = 15; i < 30; ++i) EXPECT_TRUE(ids[i] >= 100 && ids[i] < V - 100) << i;  // never a zero weight
  EXPECT_GT(distinct.size(), 15u);  // not vacuous: the draws spread over the row
}

// Boundaries the comparisons decide: a prefix whose mass is exactly top_p is
// enough (>=), and a zero weight is never drawn, not even with u = 0 (>).
TEST(CudaEmulatedSampling, ExactTopPMassAndZeroWeights) {
  const int64_t V = 512;
  std::vector<float> two(V, -INFINITY);
  two[300] = 1.0f, two[200] = 1.0f;  // probabilities 1/2 and 1/2 exactly
  std::vector<float> masked = smooth_logits(V, 61);
  masked[0] = -INFINITY;  // weight 0, first in id order
  const std::vector<SamplingCase> cases = {
      {two, sampled(1.0f, 40, 0.5f), {}, 0.75f},   // the first half alone reaches 0.5: token 200
      {two, sampled(1.0f, 40, 0.51f), {}, 0.75f},  // both needed: u = 0.75 draws the second, 300
      {masked, sampled(1.0f, 600), {}, 0.0f},      // every token, id order: 0 has weight 0, so 1
  };
  const std::vector<int> ids = run_kernel(sample_512::sample, 1024, cases, V);
  EXPECT_EQ(ids[0], 200);
  EXPECT_EQ(ids[1], 300);
  EXPECT_EQ(ids[2], 1);
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(ids[i], test::cpu_sample(cases[i])) << i;
}

// More random rows: tests/slow/cuda_emulated_sampling_slow_test.cpp.
TEST(CudaEmulatedSampling, RandomRowsMatchTheCpuExactly) {
  const auto small = test::random_sampling_cases(2048, 120, 51, 1024);
  expect_cpu_ids(sample_2048_t128::sample, 128, small, 2048);
  const auto wide = test::random_sampling_cases(2048, 12, 52, 1024);
  expect_cpu_ids(sample_2048::sample, 1024, wide, 2048);
  const auto large = test::random_sampling_cases(50257, 3, 54, 1024);
  expect_cpu_ids(sample_50257::sample, 1024, large, 50257);
  // Not vacuous: most rows are the kernel's, and they draw many tokens.
  std::set<int> distinct;
  int device_rows = 0;
  for (const auto& c : small) {
    const int id = test::cpu_sample(c);
    device_rows += id >= 0;
    distinct.insert(id);
  }
  EXPECT_GT(device_rows, 80);
  EXPECT_GT(distinct.size(), 50u);
}

TEST(CudaEmulatedSampling, PackingLaysOutTheRecordAndPairs) {
  const std::vector<TokenCount> w0 = {{-1, 2}, {4, 2}, {9, 1}, {600, 3}}, w1 = {{2, 5}};
  std::vector<SamplingRowRequest> rows(4);
  rows[0] = {.temperature = 0.7f, .top_k = 40, .top_p = 0.9f, .min_p = 0.05f, .repeat_penalty = 1.1f,
             .presence_penalty = 0.5f, .frequency_penalty = 0.25f, .penalties = w0, .u = 0.25f};
  rows[1] = {.temperature = 1.0f, .top_k = 0, .top_p = 0.9f, .penalties = w1, .u = 0.5f};  // the host's
  rows[2] = {.temperature = 0.0f, .top_k = 0, .repeat_penalty = 1.5f, .penalties = w1, .u = 7.0f};  // greedy: u unused
  rows[3] = {.temperature = 1.0f, .top_k = 5, .penalties = w1, .u = 0.0f};  // no penalty parameter set
  PackedSamplingRows out;
  pack_sampling_rows(rows, 512, out);
  ASSERT_EQ(out.records.size(), 4u * kSampleRecordInts);
  auto f = [&](int row, int field) {
    float v;
    std::memcpy(&v, &out.records[row * kSampleRecordInts + field], 4);
    return v;
  };
  auto i = [&](int row, int field) { return out.records[row * kSampleRecordInts + field]; };
  EXPECT_EQ(i(0, kSampleRecordMode), 1);
  EXPECT_EQ(f(0, kSampleRecordTemperature), 0.7f);
  EXPECT_EQ(i(0, kSampleRecordTopK), 40);
  EXPECT_EQ(f(0, kSampleRecordTopP), 0.9f);
  EXPECT_EQ(f(0, kSampleRecordMinP), 0.05f);
  EXPECT_EQ(f(0, kSampleRecordLogMinP), std::log(0.05f));
  EXPECT_EQ(f(0, kSampleRecordRepeatPenalty), 1.1f);
  EXPECT_EQ(f(0, kSampleRecordPresencePenalty), 0.5f);
  EXPECT_EQ(f(0, kSampleRecordFrequencyPenalty), 0.25f);
  EXPECT_EQ(f(0, kSampleRecordUniform), 0.25f);
  EXPECT_EQ(i(0, kSampleRecordPenaltyOffset), 0);
  EXPECT_EQ(i(0, kSampleRecordPenaltyCount), 2);  // -1 and 600 are not in the vocabulary
  EXPECT_EQ(i(1, kSampleRecordMode), 0);
  EXPECT_EQ(i(2, kSampleRecordMode), 1);
  EXPECT_EQ(f(2, kSampleRecordUniform), 0.0f);
  EXPECT_EQ(i(2, kSampleRecordPenaltyOffset), 2);
  EXPECT_EQ(i(2, kSampleRecordPenaltyCount), 1);
  EXPECT_EQ(i(3, kSampleRecordPenaltyCount), 0);
  EXPECT_EQ(out.pairs, (std::vector<int32_t>{4, 2, 9, 1, 2, 5}));
  EXPECT_EQ(out.on_host, (std::vector<uint8_t>{0, 1, 0, 0}));
  EXPECT_EQ(out.host_rows, 1);

  EXPECT_FALSE(device_can_sample(0.5f, 0, 0.95f, 0.0f));
  EXPECT_FALSE(device_can_sample(0.5f, 0, 1.0f, 0.05f));
  EXPECT_TRUE(device_can_sample(0.5f, 0, 1.0f, 0.0f));  // every token, in id order
  EXPECT_FALSE(device_can_sample(0.5f, kSampleMaxTopK + 1, 1.0f, 0.0f));
  EXPECT_TRUE(device_can_sample(0.5f, kSampleMaxTopK, 0.5f, 0.1f));
  EXPECT_TRUE(device_can_sample(0.0f, 0, 0.5f, 0.1f));

  rows[0].u = 1.0f;
  EXPECT_THROW(pack_sampling_rows(rows, 512, out), Error);
  rows[0].u = 0.5f;
  const std::vector<TokenCount> unsorted = {{9, 1}, {4, 1}};
  rows[0].penalties = unsorted;
  EXPECT_THROW(pack_sampling_rows(rows, 512, out), Error);
}

}  // namespace
}  // namespace rayo::cuda
