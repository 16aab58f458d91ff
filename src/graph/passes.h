#pragma once
// Graph rewriting passes (fusion and the like). A backend declares which passes
// it wants (those it has kernels for); both the CPU and the CUDA backend fuse
// RMSNorm+MatMul, MatMul+residual, gate+up+GLU, QKV+rope (fusion_passes.h).
#include <memory>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace rayo::graph {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  // Rewrites the graph in place; returns how many nodes it changed.
  virtual int run(Graph& graph) const = 0;
};

// Runs the passes in order, then plans memory. Returns the total count of changes.
int run_passes(Graph& graph, const std::vector<std::unique_ptr<Pass>>& passes);

}  // namespace rayo::graph
