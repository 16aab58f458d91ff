#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "common/error.h"

namespace rayo::runtime {

void SamplingParams::validate() const {
  if (!std::isfinite(temperature)) fail("--temp must be a number, got ", temperature);
  if (!(top_p >= 0.0f && top_p <= 1.0f)) fail("--top-p must be between 0 and 1, got ", top_p);
  if (!(min_p >= 0.0f && min_p <= 1.0f)) fail("--min-p must be between 0 and 1, got ", min_p);
  if (!(repeat_penalty > 0.0f) || !std::isfinite(repeat_penalty))
    fail("--repeat-penalty must be positive, got ", repeat_penalty);
  if (repeat_last_n < -1) fail("--repeat-last-n must be -1 (whole context), 0 (off) or positive, got ", repeat_last_n);
  if (!std::isfinite(presence_penalty)) fail("--presence-penalty must be a number");
  if (!std::isfinite(frequency_penalty)) fail("--frequency-penalty must be a number");
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Sampler::Sampler(const SamplingParams& params, int64_t n_vocab) : params_(params), n_vocab_(n_vocab) {
  params_.validate();
  seed_ = params.seed == 0xFFFFFFFFu ? std::random_device{}() : params.seed;
  rng_.seed(seed_);
}

void Sampler::accept(int32_t token) {
  history_.push_back(token);
  const size_t limit = params_.repeat_last_n < 0 ? SIZE_MAX : static_cast<size_t>(params_.repeat_last_n);
  while (history_.size() > limit) history_.pop_front();
}

void Sampler::apply_penalties() {
  const bool any = params_.repeat_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                   params_.frequency_penalty != 0.0f;
  if (!any || history_.empty() || params_.repeat_last_n == 0) return;
  std::unordered_map<int32_t, int> counts;
  for (int32_t t : history_) ++counts[t];
  for (const auto& [token, count] : counts) {
    if (token < 0 || token >= n_vocab_) continue;
    float& logit = candidates_[token].logit;  // candidates_ is still indexed by id here
    if (logit > 0)
      logit /= params_.repeat_penalty;
    else
      logit *= params_.repeat_penalty;
    logit -= static_cast<float>(count) * params_.frequency_penalty + params_.presence_penalty;
  }
}

int32_t Sampler::sample(std::span<const float> logits) {
  RAYO_CHECK(static_cast<int64_t>(logits.size()) == n_vocab_, "logits of ", logits.size(), " for ", n_vocab_);
  candidates_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) candidates_[i] = {static_cast<int32_t>(i), logits[i]};
  apply_penalties();

  auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  if (params_.temperature <= 0.0f)
    return std::min_element(candidates_.begin(), candidates_.end(), by_logit)->id;

  // top-k: the k largest, sorted descending. Without top-k nothing is sorted
  // up front: top-p sorts only as long a prefix as its mass needs, and min-p
  // and plain temperature sampling need no order (a server samples every
  // sequence of every step on one thread; sorting a 150k vocabulary each time
  // would cost more than the step's own sampling).
  size_t sorted = 0;  // candidates_[0, sorted) are the largest, in descending order
  const size_t k = params_.top_k > 0 ? std::min<size_t>(params_.top_k, candidates_.size()) : candidates_.size();
  if (k < candidates_.size()) {
    std::partial_sort(candidates_.begin(), candidates_.begin() + k, candidates_.end(), by_logit);
    candidates_.resize(k);
    sorted = k;
  }
  auto max_logit = [&] {
    if (sorted > 0) return candidates_.front().logit;
    float m = -INFINITY;
    for (const auto& c : candidates_) m = std::max(m, c.logit);
    return m;
  };
  // Probabilities of what is left (before temperature, as llama.cpp's top-p / min-p).
  auto softmax = [&] {
    probs_.resize(candidates_.size());
    const float top = max_logit();
    double sum = 0;
    for (size_t i = 0; i < candidates_.size(); ++i) sum += probs_[i] = std::exp(candidates_[i].logit - top);
    for (auto& p : probs_) p = static_cast<float>(p / sum);
  };
  if (params_.top_p < 1.0f) {
    // The smallest prefix of the descending order whose mass reaches top_p:
    // sort a prefix, and extend it four-fold while its mass falls short.
    const float top = max_logit();
    double sum = 0;
    for (const auto& c : candidates_) sum += std::exp(c.logit - top);
    const size_t n = candidates_.size();
    size_t want = std::max<size_t>(sorted, std::min<size_t>(64, n)), i = 0, keep = n;
    double cum = 0;
    for (bool found = false; !found;) {
      if (want > sorted) {
        std::partial_sort(candidates_.begin(), candidates_.begin() + want, candidates_.end(), by_logit);
        sorted = want;
      }
      for (; i < sorted && !found; ++i) {
        cum += static_cast<float>(std::exp(candidates_[i].logit - top) / sum);
        if (cum >= params_.top_p) keep = i + 1, found = true;
      }
      if (sorted == n) break;
      want = std::min(n, 4 * want);
    }
    candidates_.resize(keep);
  }
  if (params_.min_p > 0.0f) {
    const float threshold = max_logit() + std::log(params_.min_p);
    // Keeps the order (and so the sorted prefix, which holds the survivors first).
    std::erase_if(candidates_, [&](const Candidate& c) { return c.logit < threshold; });
  }
  for (auto& c : candidates_) c.logit /= params_.temperature;
  softmax();
  std::discrete_distribution<size_t> draw(probs_.begin(), probs_.end());
  return candidates_[draw(rng_)].id;
}

}  // namespace rayo::runtime
