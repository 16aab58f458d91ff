#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/encoder_decoder_ops.h"
#include "common/error.h"

namespace rayo::runtime {

void SamplingParams::validate(const SamplingNames& n) const {
  if (!std::isfinite(temperature)) fail(n.temperature, " must be a number, got ", temperature);
  if (!(top_p >= 0.0f && top_p <= 1.0f)) fail(n.top_p, " must be between 0 and 1, got ", top_p);
  if (!(min_p >= 0.0f && min_p <= 1.0f)) fail(n.min_p, " must be between 0 and 1, got ", min_p);
  if (!(repeat_penalty > 0.0f) || !std::isfinite(repeat_penalty))
    fail(n.repeat_penalty, " must be positive, got ", repeat_penalty);
  if (repeat_last_n < -1) fail(n.repeat_last_n, " must be -1 (whole context), 0 (off) or positive, got ", repeat_last_n);
  if (!std::isfinite(presence_penalty)) fail(n.presence_penalty, " must be a number");
  if (!std::isfinite(frequency_penalty)) fail(n.frequency_penalty, " must be a number");
}

GeneratedToken token_logprobs(int32_t id, std::span<const float> logits, int top) {
  GeneratedToken g;
  g.id = id;
  // Vectorised: a server returns this for every token of a request that asks
  // for logprobs, over vocabularies of 150K (1.5 ms a token in scalar doubles).
  const auto n = static_cast<int64_t>(logits.size());
  const float max_logit = cpu::row_max(logits.data(), n);
  const float lse = max_logit + static_cast<float>(std::log(cpu::sum_exp(logits.data(), n, max_logit)));
  g.logprob = logits[id] - lse;
  if (top > 0) {
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    const size_t k = std::min<size_t>(static_cast<size_t>(top), ids.size());
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (size_t i = 0; i < k; ++i) g.top.push_back({ids[i], logits[ids[i]] - lse});
  }
  return g;
}

bool SamplingParams::penalises() const {
  return repeat_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f;
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

void Sampler::collect_penalties(std::vector<PenaltyEntry>& out) const {
  out.clear();
  if (!params_.penalises() || params_.repeat_last_n == 0 || history_.empty()) return;
  sorted_history_.assign(history_.begin(), history_.end());
  std::sort(sorted_history_.begin(), sorted_history_.end());
  for (int32_t t : sorted_history_) {
    if (t < 0 || t >= n_vocab_) continue;
    if (!out.empty() && out.back().token == t)
      ++out.back().count;
    else
      out.push_back({t, 1});
  }
}

std::vector<PenaltyEntry> Sampler::penalties() const {
  std::vector<PenaltyEntry> out;
  collect_penalties(out);
  return out;
}

int32_t Sampler::sample(std::span<const float> logits) {
  RAYO_CHECK(static_cast<int64_t>(logits.size()) == n_vocab_, "logits of ", logits.size(), " for ", n_vocab_);
  collect_penalties(penalty_buffer_);
  const float u = params_.temperature > 0.0f ? next_uniform() : 0.0f;
  return sample_with_uniform(logits, params_, penalty_buffer_, u, workspace_);
}

namespace {

// a * b rounded to float once, as a float multiplication rounds it, but never
// fused with a following addition (a compiler may contract a * b + c into one
// fma where the ISA has it): the product of two floats is exact in double, and
// no fma spans the conversion. The CUDA kernel rounds its products alone too
// (__fmul_rn), so both sides compute the penalties bit for bit alike.
float float_product(float a, float b) { return static_cast<float>(static_cast<double>(a) * b); }

}  // namespace

size_t pick_by_uniform(std::span<const float> weights, float u) {
  double total = 0;
  for (float w : weights) total += w;
  const double target = static_cast<double>(u) * total;
  double cum = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    cum += weights[i];
    if (cum > target) return i;
  }
  // The last partial sum is `total` itself and u < 1, so only a NaN weight gets here.
  for (size_t i = weights.size(); i-- > 0;)
    if (weights[i] > 0.0f) return i;
  return 0;
}

int32_t sample_with_uniform(std::span<const float> logits, const SamplingParams& params,
                            std::span<const PenaltyEntry> penalties, float u) {
  SamplingWorkspace workspace;
  return sample_with_uniform(logits, params, penalties, u, workspace);
}

int32_t sample_with_uniform(std::span<const float> logits, const SamplingParams& params,
                            std::span<const PenaltyEntry> penalties, float u, SamplingWorkspace& workspace) {
  using Candidate = SamplingWorkspace::Candidate;
  RAYO_CHECK(!logits.empty(), "sampling from no logits");
  RAYO_CHECK(u >= 0.0f && u < 1.0f, "uniform number ", u, " outside [0, 1)");
  auto& candidates = workspace.candidates;
  candidates.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) candidates[i] = {static_cast<int32_t>(i), logits[i]};
  if (params.penalises()) {
    for (const PenaltyEntry& e : penalties) {
      if (e.token < 0 || static_cast<size_t>(e.token) >= logits.size()) continue;
      float& logit = candidates[e.token].logit;  // candidates is still indexed by id here
      if (logit > 0)
        logit /= params.repeat_penalty;
      else
        logit = float_product(logit, params.repeat_penalty);
      logit -= float_product(static_cast<float>(e.count), params.frequency_penalty) + params.presence_penalty;
    }
  }

  auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  if (params.temperature <= 0.0f) return std::min_element(candidates.begin(), candidates.end(), by_logit)->id;

  // top-k: the k largest, sorted descending. Without top-k nothing is sorted
  // up front: top-p sorts only as long a prefix as its mass needs, and min-p
  // and plain temperature sampling need no order (a server samples every
  // sequence of every step on one thread; sorting a 150k vocabulary each time
  // would cost more than the step's own sampling).
  size_t sorted = 0;  // candidates[0, sorted) are the largest, in descending order
  const size_t k = params.top_k > 0 ? std::min<size_t>(params.top_k, candidates.size()) : candidates.size();
  if (k < candidates.size()) {
    std::partial_sort(candidates.begin(), candidates.begin() + k, candidates.end(), by_logit);
    candidates.resize(k);
    sorted = k;
  }
  auto max_logit = [&] {
    if (sorted > 0) return candidates.front().logit;
    float m = -INFINITY;
    for (const auto& c : candidates) m = std::max(m, c.logit);
    return m;
  };
  if (params.top_p < 1.0f) {
    // The smallest prefix of the descending order whose mass reaches top_p
    // (probabilities before temperature, as llama.cpp): sort a prefix, and
    // extend it four-fold while its mass falls short.
    const float top = max_logit();
    double sum = 0;
    for (const auto& c : candidates) sum += std::exp(c.logit - top);
    const size_t n = candidates.size();
    size_t want = std::max<size_t>(sorted, std::min<size_t>(64, n)), i = 0, keep = n;
    double cum = 0;
    for (bool found = false; !found;) {
      if (want > sorted) {
        std::partial_sort(candidates.begin(), candidates.begin() + want, candidates.end(), by_logit);
        sorted = want;
      }
      for (; i < sorted && !found; ++i) {
        cum += static_cast<float>(std::exp(candidates[i].logit - top) / sum);
        if (cum >= params.top_p) keep = i + 1, found = true;
      }
      if (sorted == n) break;
      want = std::min(n, 4 * want);
    }
    candidates.resize(keep);
  }
  if (params.min_p > 0.0f) {
    const float threshold = max_logit() + std::log(params.min_p);
    // Keeps the order (and so the sorted prefix, which holds the survivors first).
    std::erase_if(candidates, [&](const Candidate& c) { return c.logit < threshold; });
  }
  for (auto& c : candidates) c.logit /= params.temperature;
  // The softmax's numerators are the draw's weights: normalising them first
  // would change nothing but roundings.
  const float top = max_logit();
  workspace.weights.resize(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) workspace.weights[i] = std::exp(candidates[i].logit - top);
  return candidates[pick_by_uniform(workspace.weights, u)].id;
}

graph::SampleRequest Sampler::backend_request(std::vector<graph::TokenCount>& window) {
  const auto entries = penalties();
  window.resize(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) window[i] = {entries[i].token, entries[i].count};
  const SamplingParams& p = params_;
  return graph::SampleRequest{p.temperature,      p.top_k,           p.top_p, p.min_p, p.repeat_penalty,
                              p.presence_penalty, p.frequency_penalty, window,
                              p.temperature > 0.0f ? next_uniform() : 0.0f};
}

int32_t Sampler::sample_request(std::span<const float> logits, const graph::SampleRequest& request) const {
  return sample_with_uniform(logits, params_, penalties(), request.u);
}

}  // namespace rayo::runtime
