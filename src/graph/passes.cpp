#include "graph/passes.h"

#include "graph/memory_plan.h"

namespace rayo::graph {

int run_passes(Graph& graph, const std::vector<std::unique_ptr<Pass>>& passes) {
  int changes = 0;
  for (const auto& pass : passes) changes += pass->run(graph);
  plan_memory(graph);
  return changes;
}

}  // namespace rayo::graph
