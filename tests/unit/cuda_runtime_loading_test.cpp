// Run-time loading of the CUDA driver and NVRTC: without a driver the backend
// refuses in one line (callers then use the CPU); which NVRTC a driver can
// use; the ptxas report parser.
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
  EXPECT_GE(n.version(), kMinNvrtcVersion);
  EXPECT_NE(n.library_path().find("nvrtc"), std::string::npos);
  // The one loaded is the one choose_nvrtc takes for this driver (0: none).
  const int driver = Driver::get().version();
  if (driver > 0) {
    EXPECT_LE(n.version() / 1000, driver / 1000) << "driver " << driver;
  }
}

const std::vector<NvrtcCandidate> kToolkitAndWheels = {
    {"/usr/local/cuda/lib64/libnvrtc.so.13", 13000},
    {"/usr/lib/python3/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12", 12080},
    {"/opt/cuda-11/lib64/libnvrtc.so.11.2", 11080},
};

TEST(CudaNvrtcChoice, NewestWhenThereIsNoDriver) {
  const NvrtcChoice c = choose_nvrtc(0, kToolkitAndWheels);
  EXPECT_EQ(c.index, 0);
  EXPECT_TRUE(c.error.empty());
}

// CUBINs of a newer minor of the driver's major load (minor version
// compatibility): 12.8 on a 12.4 driver, not 13.0.
TEST(CudaNvrtcChoice, NewestOfTheDriversMajorOrOlder) {
  EXPECT_EQ(choose_nvrtc(12040, kToolkitAndWheels).index, 1);
  EXPECT_EQ(choose_nvrtc(12000, kToolkitAndWheels).index, 1);
  EXPECT_EQ(choose_nvrtc(13000, kToolkitAndWheels).index, 0);
  EXPECT_EQ(choose_nvrtc(13020, kToolkitAndWheels).index, 0);
  EXPECT_EQ(choose_nvrtc(11040, kToolkitAndWheels).index, 2);
  // The order found does not matter, except among equal versions.
  const std::vector<NvrtcCandidate> reversed(kToolkitAndWheels.rbegin(), kToolkitAndWheels.rend());
  EXPECT_EQ(choose_nvrtc(12040, reversed).index, 1);
  EXPECT_EQ(choose_nvrtc(0, reversed).index, 2);
  EXPECT_EQ(choose_nvrtc(12040, {{"/a/libnvrtc.so.12", 12040}, {"/b/libnvrtc.so.12", 12040}}).index, 0);
}

TEST(CudaNvrtcChoice, NvrtcOlderThan11Point4IsNeverChosen) {
  const std::vector<NvrtcCandidate> found = {{"/old/libnvrtc.so.11.2", 11030}, {"/ok/libnvrtc.so.11.2", 11040},
                                             {"/odd/libnvrtc.so", 0}};
  EXPECT_EQ(choose_nvrtc(12040, found).index, 1);
  EXPECT_EQ(choose_nvrtc(0, found).index, 1);
  const NvrtcChoice c = choose_nvrtc(12040, {found[0], found[2]});
  EXPECT_EQ(c.index, -1);
  EXPECT_EQ(c.error,
            "no usable NVRTC: found 11.3 at /old/libnvrtc.so.11.2, unknown version at /odd/libnvrtc.so; rayo needs "
            "NVRTC 11.4 to 12.x for the CUDA driver's version 12.4");
}

// One line naming the driver's version and every version found.
TEST(CudaNvrtcChoice, RefusesInOneLineWhenNoneFitsTheDriver) {
  const NvrtcChoice c = choose_nvrtc(12040, {{"/usr/local/cuda/lib64/libnvrtc.so.13", 13000}});
  EXPECT_EQ(c.index, -1);
  EXPECT_EQ(c.error,
            "no usable NVRTC: found 13.0 at /usr/local/cuda/lib64/libnvrtc.so.13; rayo needs NVRTC 11.4 to 12.x for "
            "the CUDA driver's version 12.4");
  const NvrtcChoice old = choose_nvrtc(10020, kToolkitAndWheels);
  EXPECT_EQ(old.index, -1);
  EXPECT_NE(old.error.find("not 10.2"), std::string::npos) << old.error;
  EXPECT_NE(old.error.find("13.0 at /usr/local/cuda/lib64/libnvrtc.so.13, 12.8 at "), std::string::npos) << old.error;
  EXPECT_EQ(old.error.find('\n'), std::string::npos) << old.error;
  const NvrtcChoice none = choose_nvrtc(12040, {});
  EXPECT_EQ(none.index, -1);
  EXPECT_NE(none.error.find("not found"), std::string::npos) << none.error;
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
