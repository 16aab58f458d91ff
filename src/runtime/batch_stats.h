#pragma once
// Counters and latency histograms of the batched runtime, read by the server's
// /metrics endpoint. Updated by the scheduler thread, read by any thread.
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace rayo::runtime {

// A cumulative histogram with fixed upper bounds (seconds), Prometheus style.
class LatencyHistogram {
 public:
  explicit LatencyHistogram(std::vector<double> bounds);
  void observe(double seconds);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // observations <= bounds[i]
    uint64_t count = 0;
    double sum = 0;
  };
  Snapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last = above every bound
  uint64_t count_ = 0;
  double sum_ = 0;
};

struct BatchStats {
  std::atomic<uint64_t> prompt_tokens{0};     // prompt tokens evaluated or taken from the prefix cache
  std::atomic<uint64_t> prompt_tokens_cached{0};  // of those, taken from the prefix cache
  std::atomic<uint64_t> generated_tokens{0};  // tokens sampled and delivered
  std::atomic<uint64_t> steps{0};             // graph steps run
  std::atomic<uint64_t> step_tokens{0};       // token rows over all steps
  std::atomic<uint64_t> finished{0};          // requests that completed (stop or length)
  std::atomic<uint64_t> cancelled{0};         // requests cancelled by their client
  std::atomic<uint64_t> rejected{0};          // refused: queue full
  std::atomic<uint64_t> preemptions{0};       // sequences that gave their blocks up to be recomputed
  std::atomic<uint64_t> recomputed_tokens{0};  // positions evaluated again after a preemption
  std::atomic<int64_t> waiting{0};            // admitted to the queue, not yet running
  std::atomic<int64_t> running{0};            // sequences holding cache blocks
  std::atomic<int64_t> blocks_used{0};        // held by sequences
  std::atomic<int64_t> blocks_cached{0};      // held by nobody, keeping a cached prompt prefix
  int64_t blocks_total = 0;

  LatencyHistogram time_to_first_token{{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}};
  LatencyHistogram inter_token_latency{{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5}};
  // Where a step's time goes: choosing its tokens and building its inputs
  // (schedule), running the graph on the backend up to its results on the host
  // (compute), sampling what the backend left to the host and handing the
  // tokens to their streams (deliver).
  LatencyHistogram step_schedule{{1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1}};
  LatencyHistogram step_compute{{1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1, 3}};
  LatencyHistogram step_deliver{{1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1}};
};

}  // namespace rayo::runtime
