// Compiles the sampling kernel (kernels/sample.cu) with NVRTC for the
// vocabularies of the test models and of llama (32000), llama 3 (128256) and
// Qwen 2.5 (151936), for sm_80 and sm_90, and prints registers and spills.
// NVRTC needs no GPU; the test skips only when NVRTC itself cannot be loaded.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "backends/cuda/device_sampling.h"
#include "common/error.h"
#include "support/nvrtc_compile.h"

namespace rayo::cuda {
namespace {

TEST(CudaNvrtcSamplingCompile, SampleKernelForEveryVocabularyOnSm80AndSm90) {
  RAYO_REQUIRE_NVRTC();
  std::set<std::string> done;
  std::vector<KernelSpec> specs;
  for (int64_t n_vocab : {512, 32000, 128256, 151936}) specs.push_back(sample_kernel_spec(n_vocab));
  for (const char* arch : {"sm_80", "sm_90"}) test::compile_all("sample", specs, arch, done);
  EXPECT_EQ(done.size(), 8u);
}

TEST(CudaNvrtcSamplingCompile, SpecNamesTheShapes) {
  const KernelSpec s = sample_kernel_spec(128256);
  EXPECT_EQ(s.key(), "sample.cu N_VOCAB=128256 K_MAX=1024 SAMPLE_THREADS=1024");
  EXPECT_EQ(s.entry, "sample");
  const LaunchShape l = s.launch(7);  // a block of kSampleThreads per output row
  EXPECT_EQ(l.grid[0], 7u);
  EXPECT_EQ(l.grid[1], 1u);
  EXPECT_EQ(l.block, static_cast<unsigned>(kSampleThreads));
  EXPECT_THROW(sample_kernel_spec(0), Error);
  EXPECT_THROW(sample_kernel_spec((int64_t{1} << 24) + 1), Error);
}

}  // namespace
}  // namespace rayo::cuda
