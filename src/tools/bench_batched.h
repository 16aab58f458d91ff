#pragma once
// rayo bench -B: token generation of B sequences decoded together, one token of
// each per step (a server's batched decode step, as llama-batched-bench's text
// generation measures it): every sequence holds `depth` tokens already, then
// n_gen steps of B tokens, greedy, sampled on the backend when it can. The
// throughput is B x n_gen tokens over the steps' time.
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/backend_choice.h"
#include "runtime/model.h"

namespace rayo::tools {

struct BatchedResult {
  int batch = 0;
  std::vector<double> seconds;  // per repetition, n_gen steps
};

// One result per batch size, each repeated `reps` times after a warm-up.
std::vector<BatchedResult> bench_batched_decode(std::shared_ptr<const runtime::Model> model, const runtime::BackendChoice& backend,
                                                const std::vector<int>& batches, int n_gen, int depth, int reps);

}  // namespace rayo::tools
