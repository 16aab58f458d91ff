#include "runtime/backend_choice.h"

#include <cstdio>

#include "backends/cpu/cpu_backend.h"
#include "backends/cuda/cuda_backend.h"
#include "common/error.h"

namespace rayo::runtime {

std::unique_ptr<graph::Backend> make_backend(const BackendChoice& c) {
  if (c.device != "auto" && c.device != "cpu" && c.device != "cuda")
    fail("--device must be auto, cpu or cuda, got '", c.device, "'");
  if (c.device == "cuda" || (c.device == "auto" && cuda::cuda_available())) {
    if (c.kv_type != graph::KvType::F16) {
      if (c.device == "cuda") fail("the CUDA backend keeps its KV cache in f16 (--kv-type f16)");
    } else {
      try {
        return cuda::make_cuda_backend(cuda::CudaOptions{0, c.cuda_graphs, c.verbose, true});
      } catch (const Error& e) {
        if (c.device == "cuda" || c.verbose) std::fprintf(stderr, "rayo: %s; running on the CPU\n", e.what());
      }
    }
  }
  return std::make_unique<cpu::CpuBackend>(c.n_threads, /*progress=*/true, c.fuse);
}

}  // namespace rayo::runtime
