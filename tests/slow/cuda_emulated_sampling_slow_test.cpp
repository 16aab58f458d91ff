// The random-row half of tests/unit/cuda_emulated_sampling_test.cpp at
// scale: 1000 rows of 2048 logits and 16 of 50257 through the emulated
// sampling kernel, each equal to the CPU's sample_with_uniform (exactly: in
// the emulator the kernel calls the host's expf). Slow: about a minute of
// emulation on two cores.
#include <gtest/gtest.h>

#include "support/simt/simt.h"
#include "backends/cuda/kernels/common.cuh"

#define N_VOCAB 2048
#define K_MAX 1024
#define SAMPLE_THREADS 128
namespace sample_2048_t128 {
#include "backends/cuda/kernels/sample.cu"
}
#undef N_VOCAB
#undef K_MAX
#undef SAMPLE_THREADS
#undef SAMPLE_BOUNDS

#define N_VOCAB 50257
#define K_MAX 1024
#define SAMPLE_THREADS 1024
namespace sample_50257 {
#include "backends/cuda/kernels/sample.cu"
}
#undef N_VOCAB
#undef K_MAX
#undef SAMPLE_THREADS
#undef SAMPLE_BOUNDS

#include <set>

#include "backends/cuda/device_sampling.h"
#include "support/sampling_cases.h"
#include "support/simt/spec_launch.h"

namespace rayo::cuda {
namespace {

using SampleKernel = void (*)(SampleArgs);

// Samples the cases in launches of `batch` rows; returns how many agree with
// the CPU and counts the kernel's rows and distinct tokens.
int agreeing_rows(SampleKernel kernel, unsigned threads, const std::vector<test::SamplingCase>& cases,
                  int64_t n_vocab, size_t batch, std::set<int>& distinct, int& device_rows) {
  int agree = 0;
  for (size_t first = 0; first < cases.size(); first += batch) {
    const std::vector<test::SamplingCase> part(cases.begin() + first,
                                               cases.begin() + std::min(cases.size(), first + batch));
    const test::PackedCases in = test::pack_cases(part, n_vocab);
    std::vector<float> scratch(in.logits.size());
    std::vector<int> ids(part.size(), -7);
    const int n_rows = static_cast<int>(part.size());
    KernelSpec spec = sample_kernel_spec(n_vocab);
    spec.block = threads;  // the variant's SAMPLE_THREADS
    test::launch(spec, n_rows, kernel,
                 SampleArgs{in.logits.data(), scratch.data(), in.rows.records.data(), in.rows.pairs.data(), ids.data(),
                            &n_rows});
    for (size_t i = 0; i < part.size(); ++i) {
      const int expected = test::cpu_sample(part[i]);
      EXPECT_EQ(ids[i], expected) << "row " << first + i << " u " << part[i].u;
      agree += ids[i] == expected;
      device_rows += expected >= 0;
      distinct.insert(expected);
    }
  }
  return agree;
}

TEST(CudaEmulatedSamplingSlow, ThousandRandomRowsMatchTheCpuExactly) {
  std::set<int> distinct;
  int device_rows = 0;
  const auto cases = test::random_sampling_cases(2048, 1000, 2024, 1024);
  EXPECT_EQ(agreeing_rows(sample_2048_t128::sample, 128, cases, 2048, 100, distinct, device_rows), 1000);
  EXPECT_GT(device_rows, 700);
  EXPECT_GT(distinct.size(), 300u);
}

TEST(CudaEmulatedSamplingSlow, RandomRowsOfAGpt2VocabularyMatchTheCpuExactly) {
  std::set<int> distinct;
  int device_rows = 0;
  const auto cases = test::random_sampling_cases(50257, 16, 2025, 1024);
  EXPECT_EQ(agreeing_rows(sample_50257::sample, 1024, cases, 50257, 4, distinct, device_rows), 16);
  EXPECT_GT(device_rows, 8);
}

}  // namespace
}  // namespace rayo::cuda
