#pragma once
// The backend a step engine runs on, chosen once from the command line and
// passed along whole (--device, -t, --kv-type, --no-graph, --verbose): the
// CUDA backend where asked for (or, with "auto", where a GPU is usable), else
// the CPU; a CUDA backend that cannot start says why in one line and the CPU
// runs.
#include <memory>
#include <string>

#include "graph/backend.h"

namespace rayo::runtime {

struct BackendChoice {
  std::string device = "auto";  // auto, cpu or cuda
  int n_threads = 0;            // CPU threads; 0: the physical cores
  graph::KvType kv_type = graph::KvType::F16;
  bool cuda_graphs = true;      // false: CUDA kernels launched one by one (--no-graph)
  bool fuse = true;             // CPU: fused ops
  bool verbose = false;         // describe each step graph (and the CUDA backend's work) on stderr
  bool programmatic_launch = false;  // CUDA sm_90+: programmatic dependent launch (CudaOptions)
};

// The choice with its defaults filled in (n_threads 0: default_thread_count());
// fails in one line on a device other than auto/cpu/cuda or a thread count
// outside 1..4 x the hardware threads.
BackendChoice resolve(const BackendChoice& choice);

std::unique_ptr<graph::Backend> make_backend(const BackendChoice& choice);

// Physical cores of this machine (what -t defaults to).
int default_thread_count();

}  // namespace rayo::runtime
