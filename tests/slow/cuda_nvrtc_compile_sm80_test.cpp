// The sm_80 half of tests/unit/cuda_nvrtc_compile_test.cpp's shared-model
// test: every kernel variant of every shared model compiled for sm_80 (slow:
// a few minutes of NVRTC). Skips only when NVRTC cannot be loaded.
#include <gtest/gtest.h>

#include "support/nvrtc_compile.h"
#include "support/paths.h"

namespace rayo::cuda {
namespace {

TEST(CudaNvrtcCompileSlow, SharedModelsCompileForSm80) {
  RAYO_REQUIRE_NVRTC();
  RAYO_REQUIRE_SHARED();
  test::compile_shared_models("sm_80");
}

}  // namespace
}  // namespace rayo::cuda
