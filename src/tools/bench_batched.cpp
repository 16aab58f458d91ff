#include "tools/bench_batched.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "common/error.h"
#include "graph/executor.h"
#include "runtime/step_engine.h"

namespace rayo::tools {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kBlock = 16;

// A step graph for B sequences over a KV cache of max_batch sequences:
// sequence s owns blocks [s * per_seq, (s + 1) * per_seq).
class Batch {
 public:
  Batch(runtime::StepEngine& engine, int b, int64_t per_seq)
      : engine_(engine), b_(b), per_seq_(per_seq), greedy_(runtime::SamplingParams{.temperature = 0.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f},
                                                          engine.model().spec().n_vocab) {
    for (int32_t i = 0; i < b * per_seq_; ++i) table_.push_back(i);
    for (int s = 0; s < b; ++s) rings_.push_back(engine.ring_start(s));
    decode_ = &engine.graph(graph::GraphConfig{b, b});
  }

  // One step: token tokens[s] of every sequence s at position pos; leaves the
  // greedy next tokens in `tokens`.
  void step(std::vector<int32_t>& tokens, int32_t pos) {
    std::vector<int32_t> positions(b_, pos), seq(b_);
    for (int s = 0; s < b_; ++s) seq[s] = s;
    // Greedy draws keep no state: one sampler serves every row.
    const std::vector<runtime::Sampler*> samplers(b_, &greedy_);
    const runtime::StepRows rows{tokens, positions, seq, seq, table_, static_cast<int32_t>(per_seq_), rings_};
    tokens = engine_.run(*decode_, rows, samplers);
  }

 private:
  runtime::StepEngine& engine_;
  int b_;
  int64_t per_seq_;
  runtime::Sampler greedy_;
  std::vector<int32_t> table_;
  std::vector<int32_t> rings_;  // sequence s's ring slot is s
  graph::Executor* decode_;
};

}  // namespace

std::vector<BatchedResult> bench_batched_decode(std::shared_ptr<const runtime::Model> model, const runtime::BackendChoice& choice,
                                                const std::vector<int>& batches, int n_gen, int depth, int reps) {
  if (n_gen < 1) fail("-B needs -n of at least 1");
  std::vector<BatchedResult> results;
  if (batches.empty()) return results;
  for (int b : batches)
    if (b < 1 || b > 1024) fail("-B takes batch sizes from 1 to 1024, got ", b);
  // One backend and KV cache for the largest batch; a step graph per batch size.
  const int max_batch = *std::max_element(batches.begin(), batches.end());
  const int64_t max_seq_len = depth + n_gen + 1, per_seq = (max_seq_len + kBlock - 1) / kBlock;
  runtime::StepEngine engine(model, choice, kBlock, max_batch * per_seq, max_seq_len,
                             runtime::RingShape{max_batch, 1});
  std::mt19937 rng(42);
  const int64_t n_vocab = model->spec().n_vocab;
  for (int b : batches) {
    Batch batch(engine, b, per_seq);
    std::vector<int32_t> tokens(b);
    // The context (untimed) and n_gen steps of one token per sequence.
    auto run = [&](int steps) {
      for (auto& t : tokens) t = static_cast<int32_t>(rng() % n_vocab);
      for (int p = 0; p < depth; ++p) batch.step(tokens, p);
      const auto start = Clock::now();
      for (int i = 0; i < steps; ++i) batch.step(tokens, depth + i);
      return std::chrono::duration<double>(Clock::now() - start).count();
    };
    BatchedResult r;
    r.batch = b;
    run(std::min(n_gen, 4));  // warm-up: the graph captured, its kernels loaded
    for (int i = 0; i < reps; ++i) r.seconds.push_back(run(n_gen));
    results.push_back(r);
  }
  return results;
}

}  // namespace rayo::tools
