#include "graph/executor.h"

#include "common/error.h"

namespace rayo::graph {

Executor::Executor(Backend& backend, Graph graph) : backend_(backend), graph_(std::move(graph)) {
  fused_ = run_passes(graph_, backend_.passes());
  backend_.prepare(graph_);
}

std::span<const float> Executor::step(const StepInputs& inputs) {
  run(inputs);
  return logits();
}

void Executor::run(const StepInputs& inputs) {
  const auto& cfg = graph_.config();
  RAYO_CHECK(!inputs.tokens.empty() && static_cast<int64_t>(inputs.tokens.size()) <= cfg.max_tokens,
             "step of ", inputs.tokens.size(), " tokens on a graph for ", cfg.max_tokens);
  RAYO_CHECK(inputs.positions.size() == inputs.tokens.size(), "one position per token");
  RAYO_CHECK(static_cast<int64_t>(inputs.output_rows.size()) <= cfg.max_outputs, "too many output rows");
  RAYO_CHECK(inputs.sample.empty() || inputs.sample.size() == inputs.output_rows.size(),
             "one sample request per output row");
  backend_.begin_step(graph_, inputs);
  for (const Node& node : graph_.nodes()) {
    backend_.run(graph_, node);
    ++dispatches_;
  }
  backend_.end_step(graph_);
  ++steps_;
}

}  // namespace rayo::graph
