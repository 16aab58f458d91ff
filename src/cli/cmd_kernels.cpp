// rayo kernels --precompile -m MODEL [--arch sm_90] [--ctx N] [--batch N]
// [--parallel N [--prefill-chunk N] [--batch-invariant]] [--verbose]: compiles
// every CUDA kernel variant the model's decode and prefill graphs need (and,
// with --parallel, those of `rayo serve`'s step graphs) into the kernel cache
// ($XDG_CACHE_HOME/rayo/kernels), so that the first run on the GPU compiles
// nothing. Needs NVRTC, not a GPU: with --arch it runs on any machine;
// without, it asks the GPU for its architecture.
#include <cstdio>
#include <set>
#include <string>

#include "backends/cuda/driver_api.h"
#include "backends/cuda/kernel_cache.h"
#include "backends/cuda/kernel_specs.h"
#include "cli/command.h"
#include "common/error.h"
#include "gguf/file.h"
#include "graph/fusion_passes.h"
#include "models/architecture.h"
#include "models/model_spec.h"
#include "runtime/scheduler.h"

namespace rayo::cli {
namespace {

struct KernelsOptions {
  std::string model;
  std::string arch;
  int64_t n_ctx = 4096;
  int64_t n_batch = 512;
  int64_t block_size = 16;
  int64_t parallel = 0;  // > 0: also the server's step graphs
  int64_t prefill_chunk = 0;  // 0: the server's default
  bool batch_invariant = false;
  bool precompile = false;
  bool verbose = false;
};

std::string device_arch() {
  cuda::Driver& d = cuda::Driver::get();
  if (!d.is_available()) fail("no --arch given and ", d.unavailable_reason(), "; pass --arch sm_90 (or sm_80, ...)");
  const auto& a = d.api();
  cuda::CUdevice dev = 0;
  cuda::check(a.cuDeviceGet(&dev, 0), "cuDeviceGet");
  int major = 0, minor = 0;
  cuda::check(a.cuDeviceGetAttribute(&major, cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "attribute");
  cuda::check(a.cuDeviceGetAttribute(&minor, cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "attribute");
  return cat("sm_", major * 10 + minor);
}

void precompile(const KernelsOptions& o) {
  if (!o.precompile) fail("nothing to do: pass --precompile");
  if (o.parallel == 0 && (o.prefill_chunk > 0 || o.batch_invariant))
    fail("--prefill-chunk and --batch-invariant describe a server's steps: pass its --parallel too");
  if (!cuda::Nvrtc::get().is_available()) fail(cuda::Nvrtc::get().unavailable_reason());
  const std::string arch = o.arch.empty() ? device_arch() : o.arch;
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 5) fail("--arch must look like sm_90, got ", quote_for_message(arch));
  gguf::File file = gguf::File::open(o.model);
  models::ModelSpec spec = models::ModelSpec::from_gguf(file);
  const auto& architecture = models::find_architecture(spec.arch);
  const int driver = cuda::Driver::get().is_available() ? cuda::Driver::get().version() : 0;
  cuda::KernelCache cache(arch, driver);
  if (cache.dir().empty()) std::fprintf(stderr, "rayo: no cache directory (set XDG_CACHE_HOME or HOME): compiling only\n");
  // rayo run's decode and prefill graphs, then rayo serve's steps.
  std::vector<graph::GraphConfig> configs = {graph::GraphConfig{1, 1}, graph::GraphConfig{o.n_batch, 1}};
  if (o.parallel > 0)
    for (const auto& c : runtime::step_graph_configs(
             o.parallel, o.prefill_chunk > 0 ? o.prefill_chunk : runtime::SchedulerOptions{}.prefill_chunk,
             o.batch_invariant))
      configs.push_back(c);
  std::set<std::string> seen;  // graphs share most variants: each is listed once
  double seconds = 0;
  for (const graph::GraphConfig& config : configs) {
    graph::Graph g = architecture.build(file, spec, config);
    graph::run_passes(g, graph::decoder_fusion_passes());
    for (const auto& ks : cuda::graph_kernel_specs(g, cuda::KvShape{o.n_ctx, o.block_size})) {
      if (!seen.insert(ks.key()).second) continue;
      const uint64_t compiled = cache.compiles();
      const auto& k = cache.get(ks);
      seconds += k.compile_seconds;
      for (const auto& info : k.info)
        std::printf("%-20s %3d regs  %4d B spill  %-8s %s%s\n", info.name.c_str(), info.registers,
                    info.spill_stores + info.spill_loads,
                    cache.compiles() > compiled ? cat(static_cast<int>(k.compile_seconds * 1000), " ms").c_str()
                                                : "cached",
                    o.verbose ? ks.key().c_str() : ks.file.c_str(), "");
    }
  }
  std::printf("%zu kernel variants for %s (%s): %llu compiled in %.1f s, %llu from the cache in %s\n", seen.size(),
              o.model.c_str(), arch.c_str(), static_cast<unsigned long long>(cache.compiles()), seconds,
              static_cast<unsigned long long>(cache.disk_hits()),
              cache.dir().empty() ? "(none)" : cache.dir().string().c_str());
}

void setup(CLI::App& root) {
  auto opt = std::make_shared<KernelsOptions>();
  auto* cmd = root.add_subcommand("kernels", "Compile the CUDA kernels of a model into the kernel cache");
  cmd->add_flag("--precompile", opt->precompile, "Compile every kernel variant the model needs");
  cmd->add_option("-m,--model", opt->model, "GGUF model file")->required();
  cmd->add_option("--arch", opt->arch, "Target architecture (sm_80, sm_90, ...); default: the GPU's");
  cmd->add_option("-c,--ctx-size", opt->n_ctx, "Context length the attention kernels are built for")->check(CLI::PositiveNumber);
  cmd->add_option("-b,--batch-size", opt->n_batch, "Prompt batch size of the prefill graph")->check(CLI::PositiveNumber);
  cmd->add_option("--kv-block", opt->block_size, "Positions per KV cache block")->check(CLI::PositiveNumber);
  cmd->add_option("--parallel", opt->parallel,
                  "Also compile `rayo serve --parallel N`'s step graphs (with the same -c)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--prefill-chunk", opt->prefill_chunk,
                  "With --parallel: the server's --prefill-chunk (prompt tokens per step; default: serve's)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--batch-invariant", opt->batch_invariant, "With --parallel: the server runs with --batch-invariant");
  cmd->add_flag("--verbose", opt->verbose, "Print each variant's shape constants");
  cmd->callback([opt] { precompile(*opt); });
}

}  // namespace

RAYO_COMMAND(kernels, 80, setup);

}  // namespace rayo::cli
