#include "support/nvrtc_compile.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "backends/cuda/kernel_cache.h"
#include "common/error.h"
#include "gguf/file.h"
#include "graph/fusion_passes.h"
#include "models/architecture.h"
#include "models/model_spec.h"
#include "support/paths.h"

namespace rayo::test {

std::vector<cuda::KernelSpec> model_kernel_specs(const std::filesystem::path& path) {
  gguf::File file = gguf::File::open(path.string());
  models::ModelSpec spec = models::ModelSpec::from_gguf(file);
  const auto& arch = models::find_architecture(spec.arch);
  std::vector<cuda::KernelSpec> out;
  // Decode, prompt and batch-invariant prompt graphs (exact GEMMs).
  for (auto config : {graph::GraphConfig{1, 1}, graph::GraphConfig{64, 1}, graph::GraphConfig{64, 1, true}}) {
    graph::Graph g = arch.build(file, spec, config);
    graph::run_passes(g, graph::decoder_fusion_passes());
    for (auto& s : cuda::graph_kernel_specs(g, cuda::KvShape{512, 16})) out.push_back(s);
  }
  return out;
}

void compile_all(const std::string& label, const std::vector<cuda::KernelSpec>& specs, const std::string& arch,
                 std::set<std::string>& done) {
  std::vector<const cuda::KernelSpec*> todo;
  for (const auto& spec : specs)
    if (done.insert(spec.key() + arch).second) todo.push_back(&spec);
  // NVRTC programs are independent: compile on all cores, then check in order.
  std::vector<cuda::NvrtcResult> results(todo.size());
  std::vector<std::string> errors(todo.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < todo.size();) {
      try {
        results[i] = cuda::compile_kernel(*todo[i], arch);
      } catch (const Error& e) {
        errors[i] = e.what();
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(2u, std::thread::hardware_concurrency()); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < todo.size(); ++i) {
    const cuda::KernelSpec& spec = *todo[i];
    const cuda::NvrtcResult& r = results[i];
    ASSERT_TRUE(errors[i].empty()) << label << ": " << errors[i];
    ASSERT_FALSE(r.cubin.empty()) << spec.key();
    const auto info = cuda::parse_ptxas_log(r.log);
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

void compile_shared_models(const std::string& arch) {
  std::set<std::string> done;
  int models = 0;
  for (const auto& e : std::filesystem::directory_iterator(shared_path("models"))) {
    if (e.path().extension() != ".gguf") continue;
    ++models;
    std::vector<cuda::KernelSpec> specs;
    ASSERT_NO_THROW(specs = model_kernel_specs(e.path())) << e.path();
    compile_all(e.path().stem().string().substr(0, 8), specs, arch, done);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_GE(models, 20);
}

}  // namespace rayo::test
