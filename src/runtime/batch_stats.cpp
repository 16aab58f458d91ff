#include "runtime/batch_stats.h"

#include <algorithm>

namespace rayo::runtime {

LatencyHistogram::LatencyHistogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  counts_.assign(bounds_.size() + 1, 0);
}

void LatencyHistogram::observe(double seconds) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), seconds) - bounds_.begin();
  std::lock_guard lock(mutex_);
  ++counts_[i];
  ++count_;
  sum_ += seconds;
}

LatencyHistogram::Snapshot LatencyHistogram::snapshot() const {
  std::lock_guard lock(mutex_);
  Snapshot s;
  s.bounds = bounds_;
  uint64_t running = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) s.cumulative.push_back(running += counts_[i]);
  s.count = count_;
  s.sum = sum_;
  return s;
}

}  // namespace rayo::runtime
