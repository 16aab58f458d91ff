// Run-time loading of the CUDA driver and NVRTC: without a driver the backend
// refuses in one line (callers then use the CPU); the ptxas report parser.
#include <gtest/gtest.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/driver_api.h"
#include "backends/cuda/nvrtc.h"
#include "common/error.h"

namespace rayo::cuda {
namespace {

TEST(CudaRuntimeLoading, UnavailableMeansOneLineErrorAndNoCrash) {
  if (cuda_available()) {
    EXPECT_TRUE(cuda_unavailable_reason().empty());
    EXPECT_GT(Driver::get().version(), 0);
    GTEST_SKIP() << "a GPU is present: the refusal path is not reachable here";
  }
  const std::string reason = cuda_unavailable_reason();
  ASSERT_FALSE(reason.empty());
  EXPECT_EQ(reason.find('\n'), std::string::npos) << reason;
  try {
    make_cuda_backend();
    FAIL() << "made a CUDA backend without a usable GPU";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(reason), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  // Asking again gives the same answer (the libraries are probed once).
  EXPECT_EQ(cuda_unavailable_reason(), reason);
}

TEST(CudaRuntimeLoading, NvrtcReportsItsVersionWhenLoaded) {
  Nvrtc& n = Nvrtc::get();
  if (!n.is_available()) {
    EXPECT_FALSE(n.unavailable_reason().empty());
    GTEST_SKIP() << n.unavailable_reason();
  }
  EXPECT_GE(n.version(), 11020);
  EXPECT_NE(n.library_path().find("nvrtc"), std::string::npos);
}

TEST(CudaRuntimeLoading, PtxasReportIsParsedPerKernel) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'gemv' for 'sm_90'\n"
      "ptxas info    : Function properties for gemv\n"
      "ptxas         .     32 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 32 bytes cumulative stack size\n"
      "ptxas info    : Compiling entry function 'argmax' for 'sm_90'\n"
      "ptxas info    : Function properties for argmax\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 17 registers, used 1 barriers\n";
  const auto k = parse_ptxas_log(log);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].name, "gemv");
  EXPECT_EQ(k[0].registers, 40);
  EXPECT_EQ(k[0].spill_stores, 8);
  EXPECT_EQ(k[0].spill_loads, 12);
  EXPECT_EQ(k[0].stack, 32);
  EXPECT_EQ(k[1].name, "argmax");
  EXPECT_EQ(k[1].registers, 17);
  EXPECT_EQ(k[1].spill_stores, 0);
}

}  // namespace
}  // namespace rayo::cuda
