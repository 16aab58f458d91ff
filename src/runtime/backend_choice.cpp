#include "runtime/backend_choice.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "backends/cpu/cpu_backend.h"
#include "backends/cuda/cuda_backend.h"
#include "common/error.h"

namespace rayo::runtime {

int default_thread_count() {
  // Count distinct (package, core) pairs: hyperthreads do not help a
  // bandwidth-bound decode and hurt its barriers.
  std::set<std::pair<int, int>> cores;
  for (unsigned cpu = 0;; ++cpu) {
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream core(base + "core_id"), package(base + "physical_package_id");
    int c, p;
    if (!(core >> c) || !(package >> p)) break;
    cores.insert({p, c});
  }
  const int n = static_cast<int>(cores.size());
  return n > 0 ? n : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

BackendChoice resolve(const BackendChoice& choice) {
  BackendChoice c = choice;
  if (c.device != "auto" && c.device != "cpu" && c.device != "cuda")
    fail("--device must be auto, cpu or cuda, got '", c.device, "'");
  const int max_threads = 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (c.n_threads < 0 || c.n_threads > max_threads)
    fail("thread count must be between 1 and ", max_threads, " on this machine, got ", c.n_threads);
  if (c.n_threads == 0) c.n_threads = default_thread_count();
  return c;
}

std::unique_ptr<graph::Backend> make_backend(const BackendChoice& choice) {
  const BackendChoice c = resolve(choice);
  if (c.device == "cuda" || (c.device == "auto" && cuda::cuda_available())) {
    if (c.kv_type != graph::KvType::F16) {
      if (c.device == "cuda") fail("the CUDA backend keeps its KV cache in f16 (--kv-type f16)");
    } else {
      try {
        return cuda::make_cuda_backend(cuda::CudaOptions{0, c.cuda_graphs, c.verbose, true, c.programmatic_launch});
      } catch (const Error& e) {
        if (c.device == "cuda" || c.verbose) std::fprintf(stderr, "rayo: %s; running on the CPU\n", e.what());
      }
    }
  }
  return std::make_unique<cpu::CpuBackend>(c.n_threads, /*progress=*/true, c.fuse);
}

}  // namespace rayo::runtime
