#pragma once
// The backend a session or the server's scheduler runs on (--device): the CUDA
// backend where asked for (or, with "auto", where a GPU is usable), else the
// CPU; a CUDA backend that cannot start says why in one line and the CPU runs.
#include <memory>
#include <string>

#include "graph/backend.h"

namespace rayo::runtime {

struct BackendChoice {
  std::string device = "auto";  // auto, cpu or cuda
  int n_threads = 1;            // CPU threads
  graph::KvType kv_type = graph::KvType::F16;
  bool cuda_graphs = true;      // false: CUDA kernels launched one by one (--no-graph)
  bool fuse = true;             // CPU: fused ops
  bool verbose = false;
};

std::unique_ptr<graph::Backend> make_backend(const BackendChoice& choice);

}  // namespace rayo::runtime
