// The kernel cache with NVRTC only (no GPU): in-memory hits and misses, CUBINs
// on disk that a second cache (a second run) reads instead of compiling, and
// corrupt or foreign files ignored and rebuilt.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "backends/cuda/kernel_cache.h"
#include "backends/cuda/kernel_specs.h"
#include "backends/cuda/nvrtc.h"
#include "support/paths.h"

namespace rayo::cuda {
namespace {

#define REQUIRE_NVRTC()                                                             \
  do {                                                                              \
    if (!Nvrtc::get().is_available())                                               \
      GTEST_SKIP() << "NVRTC not available: " << Nvrtc::get().unavailable_reason(); \
  } while (0)

std::vector<KernelSpec> some_specs() {
  return {elementwise_spec(512), rms_norm_spec(512, 512, 1e-5f), kv_store_spec(256, 16)};
}

TEST(CudaKernelCache, CountsHitsAndMissesInMemory) {
  REQUIRE_NVRTC();
  KernelCache cache("sm_90", 0, "");  // memory only
  const auto specs = some_specs();
  for (const auto& s : specs) EXPECT_FALSE(cache.get(s).cubin.empty());
  EXPECT_EQ(cache.misses(), 3u);
  EXPECT_EQ(cache.compiles(), 3u);
  EXPECT_EQ(cache.hits(), 0u);
  for (const auto& s : specs) cache.get(s);
  EXPECT_EQ(cache.hits(), 3u);
  EXPECT_EQ(cache.compiles(), 3u);
  // Same kernel, other constants: a different variant.
  cache.get(elementwise_spec(513));
  EXPECT_EQ(cache.compiles(), 4u);
  // The ptxas report is parsed for every kernel of the file.
  EXPECT_EQ(cache.get(specs[0]).info.size(), 6u);  // add, add_bias, swiglu, gelu, add_position, select_rows
}

TEST(CudaKernelCache, SecondRunReadsCubinsFromDiskAndCompilesNothing) {
  REQUIRE_NVRTC();
  const auto dir = test::temp_dir("kernel_cache_disk");
  const auto specs = some_specs();
  {
    KernelCache first("sm_90", 12040, dir);
    for (const auto& s : specs) first.get(s);
    EXPECT_EQ(first.compiles(), 3u);
    EXPECT_EQ(first.disk_hits(), 0u);
  }
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(e.path().extension(), ".cubin") << e.path();  // no temporaries left
    ++files;
  }
  EXPECT_EQ(files, 3u);
  KernelCache second("sm_90", 12040, dir);
  std::vector<std::vector<char>> cubins;
  for (const auto& s : specs) cubins.push_back(second.get(s).cubin);
  EXPECT_EQ(second.compiles(), 0u);
  EXPECT_EQ(second.disk_hits(), 3u);
  EXPECT_EQ(second.misses(), 3u);
  EXPECT_FALSE(second.get(specs[0]).info.empty());  // the ptxas report is kept on disk too
  // Another architecture or driver version is another key: compiled again.
  KernelCache other_arch("sm_80", 12040, dir);
  other_arch.get(specs[0]);
  EXPECT_EQ(other_arch.compiles(), 1u);
  KernelCache other_driver("sm_90", 12050, dir);
  other_driver.get(specs[0]);
  EXPECT_EQ(other_driver.compiles(), 1u);
}

TEST(CudaKernelCache, CorruptAndForeignFilesAreIgnoredAndRebuilt) {
  REQUIRE_NVRTC();
  const auto dir = test::temp_dir("kernel_cache_corrupt");
  const KernelSpec spec = kv_store_spec(128, 16);
  std::vector<char> good;
  {
    KernelCache c("sm_90", 1, dir);
    good = c.get(spec).cubin;
  }
  KernelCache probe("sm_90", 1, dir);
  const auto file = probe.file_for(spec);
  ASSERT_TRUE(std::filesystem::exists(file));
  const auto size = std::filesystem::file_size(file);

  // Truncated: rejected, recompiled, rewritten whole.
  std::filesystem::resize_file(file, size / 2);
  {
    KernelCache c("sm_90", 1, dir);
    EXPECT_EQ(c.get(spec).cubin, good);
    EXPECT_EQ(c.compiles(), 1u);
    EXPECT_EQ(c.rejected_files(), 1u);
  }
  {  // rewritten whole: read back without compiling (its ptxas log may differ in length)
    KernelCache c("sm_90", 1, dir);
    c.get(spec);
    EXPECT_EQ(c.compiles(), 0u);
    EXPECT_EQ(c.disk_hits(), 1u);
  }

  // One flipped byte in the CUBIN: the checksum rejects it.
  {
    const auto now = std::filesystem::file_size(file);
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(now - 20));
    char b = 0;
    f.read(&b, 1);
    f.seekp(static_cast<std::streamoff>(now - 20));
    b = static_cast<char>(b ^ 0x5a);
    f.write(&b, 1);
  }
  {
    KernelCache c("sm_90", 1, dir);
    EXPECT_EQ(c.get(spec).cubin, good);
    EXPECT_EQ(c.compiles(), 1u);
    EXPECT_EQ(c.rejected_files(), 1u);
  }

  // Garbage that is not a cache file at all.
  {
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f << "not a cubin";
  }
  {
    KernelCache c("sm_90", 1, dir);
    EXPECT_EQ(c.get(spec).cubin, good);
    EXPECT_EQ(c.compiles(), 1u);
  }
  // And the rebuilt file is good again.
  KernelCache again("sm_90", 1, dir);
  again.get(spec);
  EXPECT_EQ(again.compiles(), 0u);
  EXPECT_EQ(again.disk_hits(), 1u);
}

TEST(CudaKernelCache, DefaultDirectoryFollowsXdgCacheHome) {
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old ? old : "";
  setenv("XDG_CACHE_HOME", "/tmp/rayo-xdg-test", 1);
  EXPECT_EQ(default_kernel_cache_dir(), std::filesystem::path("/tmp/rayo-xdg-test/rayo/kernels"));
  unsetenv("XDG_CACHE_HOME");
  if (const char* home = std::getenv("HOME")) {
    EXPECT_EQ(default_kernel_cache_dir(), std::filesystem::path(home) / ".cache/rayo/kernels");
  }
  if (old) setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

TEST(CudaKernelCache, PrecompileCommandFillsTheCacheWithoutAGpu) {
  REQUIRE_NVRTC();
  RAYO_REQUIRE_SHARED();
  const auto dir = test::temp_dir("kernel_cache_cli");
  const std::string cmd = "XDG_CACHE_HOME=" + dir.string() + " " + test::rayo_binary().string() +
                          " kernels --precompile -m " + test::shared_path("models/stories260K.gguf").string() +
                          " --arch sm_90 -c 512 -b 8";
  const auto first = test::run_command(cmd);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("regs"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find(" 0 from the cache"), std::string::npos) << first.output;
  const auto second = test::run_command(cmd);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find(": 0 compiled"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("cached"), std::string::npos) << second.output;
  // A server's step graphs (buckets 1 .. 4 + 16 tokens) need variants of their own.
  const auto serve = test::run_command(cmd + " --parallel 4 --prefill-chunk 16");
  ASSERT_EQ(serve.exit_code, 0) << serve.output;
  EXPECT_EQ(serve.output.find(": 0 compiled"), std::string::npos) << serve.output;
  const auto again = test::run_command(cmd + " --parallel 4 --prefill-chunk 16");
  EXPECT_NE(again.output.find(": 0 compiled"), std::string::npos) << again.output;
  const auto server_only = test::run_command(cmd + " --batch-invariant");
  EXPECT_NE(server_only.exit_code, 0);
  EXPECT_NE(server_only.output.find("pass its --parallel too"), std::string::npos) << server_only.output;
  const auto bad = test::run_command(test::rayo_binary().string() + " kernels --precompile -m " +
                                     test::shared_path("models/stories260K.gguf").string() + " --arch banana");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--arch must look like sm_90"), std::string::npos) << bad.output;
}

// RAYO_GEMM_TILE puts every prompt GEMM on one tile (for timing the tiles side
// by side on a GPU): int8 gives the Q4_K matmuls GEMM_EXACT=2, f16 none, and
// anything else is refused in one line.
TEST(CudaKernelCache, GemmTileEnvironmentPicksThePromptGemmsTile) {
  REQUIRE_NVRTC();
  RAYO_REQUIRE_SHARED();
  const auto dir = test::temp_dir("kernel_cache_tile");
  auto precompile = [&](const std::string& tile) {
    return test::run_command("XDG_CACHE_HOME=" + dir.string() + " RAYO_GEMM_TILE=" + tile + " " +
                             test::rayo_binary().string() + " kernels --precompile --verbose --arch sm_90 -c 512 -b 32 -m " +
                             test::shared_path("models/synth-llama-q4_k_m.gguf").string());
  };
  const auto int8 = precompile("int8");
  ASSERT_EQ(int8.exit_code, 0) << int8.output;
  EXPECT_NE(int8.output.find("gemm.cu WTYPE=12 COLS=512 ROWS=512 TT=8"), std::string::npos) << int8.output;
  EXPECT_NE(int8.output.find("GEMM_EXACT=2"), std::string::npos) << int8.output;
  const auto f16 = precompile("f16");
  ASSERT_EQ(f16.exit_code, 0) << f16.output;
  EXPECT_EQ(f16.output.find("GEMM_EXACT"), std::string::npos) << f16.output;
  const auto bad = precompile("fp8");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("RAYO_GEMM_TILE=\"fp8\" is not one of f16, int8"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace rayo::cuda
