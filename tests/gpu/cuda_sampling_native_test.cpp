// The device sampling kernel (kernels/sample.cu) compiled by NVRTC and run on
// the GPU at llama 3's vocabulary (128256), against the CPU's
// runtime::sample_with_uniform. Skips when no GPU is usable.
//
// The GPU's expf may round differently from the host's in the last place,
// which can move a top-p cut or a draw whose target lies within about 1e-7
// of a boundary: random rows must agree in at least 995 of 1000 (in
// practice all do). The constructed rows have weights that are exact on
// both sides (e^0 = 1, e^-inf = 0) or draw no random number, and must agree
// exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/device_sampling.h"
#include "backends/cuda/kernel_cache.h"
#include "support/native_gpu.h"
#include "support/require_gpu.h"
#include "support/sampling_cases.h"

namespace rayo::cuda {
namespace {

constexpr int64_t kVocab = 128256;

using Gpu = test::NativeGpu;

// Samples the cases on the GPU in one launch of `grid` blocks with *n_rows =
// n_rows (default: all); rows past n_rows keep -7.
std::vector<int> sample_on_gpu(Gpu& gpu, const std::vector<test::SamplingCase>& cases, int n_rows = -1) {
  if (n_rows < 0) n_rows = static_cast<int>(cases.size());
  const test::PackedCases in = test::pack_cases(cases, kVocab);
  auto logits = gpu.put(in.logits), scratch = gpu.put(std::vector<float>(in.logits.size()));
  auto records = gpu.put(in.rows.records), pairs = gpu.put(in.rows.pairs);
  auto ids = gpu.put(std::vector<int>(cases.size(), -7)), n = gpu.put(std::vector<int>{n_rows});
  using kargs::Dev;
  gpu.run(sample_kernel_spec(kVocab), static_cast<int64_t>(cases.size()),
          kargs::SampleArgs{.logits = Dev{logits.ptr()},
                            .scratch = Dev{scratch.ptr()},
                            .records = Dev{records.ptr()},
                            .pairs = Dev{pairs.ptr()},
                            .ids = Dev{ids.ptr()},
                            .n_rows = Dev{n.ptr()}});
  return gpu.get<int>(ids, cases.size());
}

runtime::SamplingParams sampled(float temperature, int top_k, float top_p = 1.0f, float min_p = 0.0f) {
  runtime::SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  return p;
}

TEST(CudaSamplingNative, RandomRowsAgreeWithTheCpu) {
  RAYO_REQUIRE_GPU();
  Gpu gpu;
  int rows = 0, agree = 0, device_rows = 0;
  std::set<int> distinct;
  for (uint32_t batch = 0; batch < 8; ++batch) {  // 8 x 125 rows of 128256 logits
    const auto cases = test::random_sampling_cases(kVocab, 125, 1000 + batch, kSampleMaxTopK);
    const std::vector<int> ids = sample_on_gpu(gpu, cases);
    for (size_t i = 0; i < cases.size(); ++i) {
      const int expected = test::cpu_sample(cases[i]);
      ++rows;
      device_rows += expected >= 0;
      distinct.insert(expected);
      if (ids[i] == expected) {
        ++agree;
      } else {
        const auto& p = cases[i].params;
        std::printf("differs: batch %u row %zu gpu %d cpu %d (temp %g top_k %d top_p %g min_p %g u %.9g)\n", batch, i,
                    ids[i], expected, p.temperature, p.top_k, p.top_p, p.min_p, cases[i].u);
      }
    }
  }
  std::printf("%d of %d rows agree\n", agree, rows);
  EXPECT_GE(agree, 995);
  EXPECT_GT(device_rows, 700);
  EXPECT_GT(distinct.size(), 300u);
}

TEST(CudaSamplingNative, ConstructedRowsAgreeExactly) {
  RAYO_REQUIRE_GPU();
  Gpu gpu;
  std::vector<test::SamplingCase> cases;
  // Greedy with ties, and a penalty that changes the greedy choice.
  std::vector<float> ties(kVocab, -1.0f);
  for (int id : {120000, 7000, 7001}) ties[id] = 2.0f;
  cases.push_back({ties, sampled(0.0f, 0), {}, 0.0f});
  runtime::SamplingParams pen = sampled(0.0f, 40);
  pen.repeat_penalty = 1.3f, pen.presence_penalty = 0.2f, pen.frequency_penalty = 0.1f;
  cases.push_back({ties, pen, {{7000, 1}, {7001, 3}}, 0.0f});
  // Every logit equal: top_k 1024 keeps ids 0..1023 in order, and u in the
  // middle of part j of 1024 draws id j.
  const std::vector<float> flat(kVocab, 0.5f);
  for (int j : {0, 1, 511, 1000, 1023})
    cases.push_back({flat, sampled(1.0f, 1024), {}, (static_cast<float>(j) + 0.5f) / 1024.0f});
  // 129 equal logits (ids 0, 1000, ..., 128000), -inf elsewhere: top_k 40
  // keeps 0 .. 39000, and u = 0.99 draws candidate 39; top_p 0.9 keeps 36 of
  // them (36 * float(1/40) >= 0.9f), of which u = 0.5 draws candidate 18.
  std::vector<float> spread(kVocab, -INFINITY);
  for (int id = 0; id < kVocab; id += 1000) spread[id] = 1.0f;
  cases.push_back({spread, sampled(1.0f, 40), {}, 0.99f});
  cases.push_back({spread, sampled(0.7f, 40, 0.9f), {}, 0.5f});
  // Exactly half the mass in the first candidate reaches top_p = 0.5.
  std::vector<float> two(kVocab, -INFINITY);
  two[100000] = 3.0f, two[4] = 3.0f;
  cases.push_back({two, sampled(1.0f, 40, 0.5f), {}, 0.75f});
  cases.push_back({two, sampled(1.0f, 40, 0.51f), {}, 0.75f});
  // Every token in id order (top_k 0, OpenAI's default): u = 0.5 of a flat
  // row draws the middle id, 128256 / 2.
  cases.push_back({flat, sampled(1.0f, 0), {}, 0.5f});
  // A row the host takes: more candidates than the device keeps.
  cases.push_back({flat, sampled(1.0f, kSampleMaxTopK + 1), {}, 0.5f});
  const std::vector<int> ids = sample_on_gpu(gpu, cases);
  const std::vector<int> expected = {7000, 120000, 0, 1, 511, 1000, 1023, 39000, 18000, 4, 100000, 64128, -1};
  ASSERT_EQ(ids.size(), expected.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(ids[i], expected[i]) << "row " << i;
    EXPECT_EQ(ids[i], test::cpu_sample(cases[i])) << "row " << i;
  }
}

TEST(CudaSamplingNative, RowsPastTheStepCountAreNotWritten) {
  RAYO_REQUIRE_GPU();
  Gpu gpu;
  const auto cases = test::random_sampling_cases(kVocab, 6, 77, kSampleMaxTopK);
  const std::vector<int> ids = sample_on_gpu(gpu, cases, 2);
  for (size_t i = 2; i < cases.size(); ++i) EXPECT_EQ(ids[i], -7) << i;
  for (size_t i = 0; i < 2; ++i) EXPECT_NE(ids[i], -7) << i;
}

}  // namespace
}  // namespace rayo::cuda
