#pragma once
// The CUDA backend: runs a (fused) graph with NVRTC-compiled kernels
// specialised to the model's shapes (kernel_specs.h), on weights uploaded once
// at prepare, an activation arena in one device allocation and an f16 KV cache
// on the device. A step is captured once per graph into a CUDA graph and
// replayed: per step, one small upload (the step's token ids, positions, output
// rows, block table and sampling requests), one graph launch and one download
// (the logits, or the sampled ids of a step with sample requests: the sampling
// chain runs on the device, kernels/sample.cu). `use_graphs = false` launches
// node by node instead.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "backends/cuda/device_memory.h"
#include "graph/backend.h"

namespace rayo::cuda {

struct CudaOptions {
  int device = 0;
  bool use_graphs = true;   // false: eager launches (debugging, --no-graph)
  bool verbose = false;     // kernel compile lines and the weight upload summary
  bool progress = true;     // one progress line while weights upload
  // sm_90+: each kernel's blocks are scheduled while the previous kernel's
  // last blocks run (programmatic dependent launch), not after a launch gap.
  // Off by default: on an H100 it gave qwen2.5-1.5b's decode +3% and took
  // ~1% from llama3-8b's (kernels/common.cuh).
  bool programmatic_launch = false;
};

// True when libcuda, a GPU and NVRTC are present.
bool cuda_available();
std::string cuda_unavailable_reason();

class CudaBackend;

// The backend, or rayo::Error (one line, e.g. "no CUDA driver (libcuda.so.1 not
// found)") when it cannot run here. Callers fall back to the CPU on that error.
std::unique_ptr<graph::Backend> make_cuda_backend(const CudaOptions& options = {});

// Counters and device-side extras of a backend made by make_cuda_backend.
struct CudaBackendInfo {
  std::string device_name, arch;
  TransferStats stats;
  uint64_t kernels_compiled = 0, kernel_cache_hits = 0, kernel_cache_misses = 0;
  uint64_t kernels_from_disk = 0;   // misses the disk cache answered (no compile)
  double kernel_compile_seconds = 0;  // NVRTC time of the kernels_compiled
  int kernels_per_step = 0;  // kernels in the last prepared graph's step (launches per step without the CUDA graph)
  bool programmatic_launch = false;  // kernels launched with programmatic dependent launch (CudaOptions)
};
CudaBackendInfo cuda_backend_info(const graph::Backend& backend);
// Kernels one step of a prepared graph launches (what a step costs in launches
// without the CUDA graph that replays them as one).
int kernels_per_step(const graph::Backend& backend, const graph::Graph& graph);

}  // namespace rayo::cuda
