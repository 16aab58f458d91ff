#pragma once
// Runs a graph on a backend, one step at a time, counting dispatches (tests pin
// the count per decode step).
#include <cstdint>
#include <span>

#include "graph/backend.h"
#include "graph/graph.h"

namespace rayo::graph {

class Executor {
 public:
  // Runs the backend's passes on the graph, plans its memory and prepares it.
  Executor(Backend& backend, Graph graph);

  // Runs one step and returns the logits of the requested rows.
  std::span<const float> step(const StepInputs& inputs);
  // Runs one step, leaving its results with the backend: the logits (logits())
  // or, for a step with sample requests, the sampled ids (sampled()), each
  // brought back from the device only when asked for.
  void run(const StepInputs& inputs);
  std::span<const float> logits() { return backend_.output(graph_); }
  std::span<const int32_t> sampled() { return backend_.sampled(graph_); }

  const Graph& graph() const { return graph_; }
  uint64_t steps() const { return steps_; }
  uint64_t dispatches() const { return dispatches_; }
  int fused_nodes() const { return fused_; }

 private:
  Backend& backend_;
  Graph graph_;
  int fused_ = 0;
  uint64_t steps_ = 0;
  uint64_t dispatches_ = 0;
};

}  // namespace rayo::graph
