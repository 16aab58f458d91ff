// Compiles every kernel variant the CUDA backend would launch for the shared
// models and for the llama3-8b and qwen2.5-1.5b shapes, with NVRTC, for sm_80
// and sm_90, and prints registers and spills per kernel (ptxas -v). NVRTC
// needs no GPU; the test skips only when NVRTC itself cannot be loaded.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "backends/cuda/kernel_cache.h"
#include "backends/cuda/kernel_specs.h"
#include "backends/cuda/nvrtc.h"
#include "common/error.h"
#include "gguf/file.h"
#include "graph/fusion_passes.h"
#include "models/architecture.h"
#include "models/model_spec.h"
#include "support/paths.h"

namespace rayo::cuda {
namespace {

#define REQUIRE_NVRTC()                                                                     \
  do {                                                                                      \
    if (!Nvrtc::get().is_available())                                                       \
      GTEST_SKIP() << "NVRTC not available: " << Nvrtc::get().unavailable_reason();         \
  } while (0)

DecoderShape llama3_8b() {
  DecoderShape s;
  s.n_embd = 4096;
  s.n_ff = 14336;
  s.n_vocab = 128256;
  s.n_head = 32;
  s.n_head_kv = 8;
  s.head_dim = 128;
  s.rope_base = 500000.0f;
  s.eps = 1e-5f;
  return s;
}

DecoderShape qwen25_1_5b() {
  DecoderShape s;
  s.n_embd = 1536;
  s.n_ff = 8960;
  s.n_vocab = 151936;
  s.n_head = 12;
  s.n_head_kv = 2;
  s.head_dim = 128;
  s.rope_base = 1e6f;
  s.eps = 1e-6f;
  s.neox = true;
  s.qkv_bias = true;
  return s;
}

// The fused decode (1 token) and prefill (64 tokens) graphs of a model file.
std::vector<KernelSpec> model_specs(const std::filesystem::path& path) {
  gguf::File file = gguf::File::open(path.string());
  models::ModelSpec spec = models::ModelSpec::from_gguf(file);
  const auto& arch = models::find_architecture(spec.arch);
  std::vector<KernelSpec> out;
  for (int64_t tokens : {1, 64}) {
    graph::Graph g = arch.build(file, spec, graph::GraphConfig{tokens, 1});
    graph::run_passes(g, graph::cuda_fusion_passes());
    for (auto& s : graph_kernel_specs(g, KvShape{512, 16})) out.push_back(s);
  }
  return out;
}

// Compiles the variants not compiled yet (on all cores: NVRTC programs are
// independent), then checks and prints each one in order.
void compile_all(const std::string& label, const std::vector<KernelSpec>& specs, const std::string& arch,
                 std::set<std::string>& done) {
  std::vector<const KernelSpec*> todo;
  for (const auto& spec : specs)
    if (done.insert(spec.key() + arch).second) todo.push_back(&spec);
  std::vector<NvrtcResult> results(todo.size());
  std::vector<std::string> errors(todo.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < todo.size();) {
      try {
        results[i] = compile_kernel(*todo[i], arch);
      } catch (const Error& e) {
        errors[i] = e.what();
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(2u, std::thread::hardware_concurrency()); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < todo.size(); ++i) {
    const KernelSpec& spec = *todo[i];
    const NvrtcResult& r = results[i];
    ASSERT_TRUE(errors[i].empty()) << label << ": " << errors[i];
    ASSERT_FALSE(r.cubin.empty()) << spec.key();
    const auto info = parse_ptxas_log(r.log);
    ASSERT_FALSE(info.empty()) << "no ptxas report for " << spec.key() << ":\n" << r.log;
    for (const auto& k : info) {
      std::printf("%-8s %-6s %-18s regs %3d  spill st %4d ld %4d  stack %4d  %.2fs  %s\n", label.c_str(),
                  arch.c_str(), k.name.c_str(), k.registers, k.spill_stores, k.spill_loads, k.stack, r.seconds,
                  spec.key().c_str());
      EXPECT_GT(k.registers, 0) << spec.key();
      EXPECT_LE(k.registers, 255) << spec.key();
      // Launch bounds of 128/256 threads leave room for every kernel without spilling.
      EXPECT_EQ(k.spill_stores, 0) << spec.key();
    }
  }
}

TEST(CudaNvrtcCompile, Llama3_8bAndQwen25ShapesCompileForSm80AndSm90) {
  REQUIRE_NVRTC();
  std::set<std::string> done;
  for (const char* arch : {"sm_80", "sm_90"}) {
    compile_all("llama3", decoder_kernel_specs(llama3_8b()), arch, done);
    compile_all("qwen2.5", decoder_kernel_specs(qwen25_1_5b()), arch, done);
  }
}

TEST(CudaNvrtcCompile, EveryWeightFormatAndHeadDim) {
  REQUIRE_NVRTC();
  std::set<std::string> done;
  const TensorType types[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q4_0,
                              TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};
  const TensorType fallback[] = {TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q2_K,
                                 TensorType::Q3_K};
  for (const char* arch : {"sm_80", "sm_90"}) {
    std::vector<KernelSpec> specs;
    for (TensorType t : types) {
      specs.push_back(gemv_spec(t, 4096, 4096, 1, 1e-5f, 0));
      specs.push_back(gemv_spec(t, 4096, 4096, 4, -1.0f, 1));
    }
    for (TensorType t : fallback) specs.push_back(dequant_spec(t, 4096));
    for (int hd : {64, 80, 96, 128, 256}) specs.push_back(attention_spec(32, 8, hd, 8192, 16));
    compile_all("formats", specs, arch, done);
  }
}

// Every shared model's decode and prefill variants for sm_90 (the same
// variants for sm_80 are compiled by the slow-labelled twin of this test,
// tests/slow/cuda_nvrtc_compile_sm80_test.cpp: together they take minutes).
TEST(CudaNvrtcCompile, SharedModelsCompileForSm90) {
  REQUIRE_NVRTC();
  RAYO_REQUIRE_SHARED();
  std::set<std::string> done;
  int models = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::shared_path("models"))) {
    if (e.path().extension() != ".gguf") continue;
    ++models;
    std::vector<KernelSpec> specs;
    ASSERT_NO_THROW(specs = model_specs(e.path())) << e.path();
    compile_all(e.path().stem().string().substr(0, 8), specs, "sm_90", done);
  }
  EXPECT_GE(models, 20);
}

TEST(CudaNvrtcCompile, BadSourceFailsWithOneLine) {
  REQUIRE_NVRTC();
  try {
    Nvrtc::get().compile("bad.cu", "extern \"C\" __global__ void k() { undefined_thing(); }", {},
                         {"--gpu-architecture=sm_90"});
    FAIL() << "compiled an invalid kernel";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("bad.cu"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace rayo::cuda
