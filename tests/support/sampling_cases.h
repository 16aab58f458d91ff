#pragma once
// Sampling requests for the device sampling kernel's tests (emulated and
// native): rows of logits with their parameters, penalty windows and u, the
// CPU's answer for each (runtime::sample_with_uniform), and their packing
// into the kernel's inputs (cuda::pack_sampling_rows).
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "backends/cuda/device_sampling.h"
#include "runtime/sampler.h"

namespace rayo::test {

struct SamplingCase {
  std::vector<float> logits;
  runtime::SamplingParams params;
  std::vector<runtime::PenaltyEntry> penalties;  // ascending tokens
  float u = 0.0f;
};

// The CPU's token for a case, or -1 where the kernel leaves the row to the host.
inline int32_t cpu_sample(const SamplingCase& c) {
  if (!cuda::device_can_sample(c.params.temperature, c.params.top_k, c.params.top_p, c.params.min_p)) return -1;
  return runtime::sample_with_uniform(c.logits, c.params, c.penalties, c.u);
}

// The kernel's inputs for cases[0..n) (every case has n_vocab logits).
struct PackedCases {
  std::vector<float> logits;  // [rows][n_vocab]
  cuda::PackedSamplingRows rows;
};

inline PackedCases pack_cases(const std::vector<SamplingCase>& cases, int64_t n_vocab) {
  PackedCases out;
  std::vector<std::vector<cuda::TokenCount>> windows(cases.size());
  std::vector<cuda::SamplingRowRequest> requests(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const SamplingCase& c = cases[i];
    for (const auto& e : c.penalties) windows[i].push_back({e.token, e.count});
    const runtime::SamplingParams& p = c.params;
    requests[i] = {.temperature = p.temperature,
                   .top_k = p.top_k,
                   .top_p = p.top_p,
                   .min_p = p.min_p,
                   .repeat_penalty = p.repeat_penalty,
                   .presence_penalty = p.presence_penalty,
                   .frequency_penalty = p.frequency_penalty,
                   .penalties = windows[i],
                   .u = c.u};
    out.logits.insert(out.logits.end(), c.logits.begin(), c.logits.end());
  }
  cuda::pack_sampling_rows(requests, n_vocab, out.rows);
  return out;
}

// Random requests that reach every step of the chain: continuous logits,
// logits on a coarse grid (many ties, also at the top-k boundary) and peaked
// rows (top-p and min-p cut early); greedy and sampled rows, top_k from 1 to
// k_max (and a few rows the host must take), top-p, min-p, penalties on
// likely and unlikely tokens, u anywhere in [0, 1) including both ends.
inline std::vector<SamplingCase> random_sampling_cases(int64_t n_vocab, int count, uint32_t seed, int k_max) {
  std::mt19937 rng(seed);
  auto pick = [&]<typename T, size_t N>(const T(&options)[N]) { return options[rng() % N]; };
  std::normal_distribution<float> normal(0.0f, 2.5f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<SamplingCase> cases(count);
  for (SamplingCase& c : cases) {
    c.logits.resize(n_vocab);
    switch (rng() % 3) {
      case 0:
        for (auto& l : c.logits) l = normal(rng);
        break;
      case 1:
        for (auto& l : c.logits) l = std::round(normal(rng) * 2.0f) / 2.0f;
        break;
      default:
        for (auto& l : c.logits) l = -5.0f * unit(rng);
        for (int j = 0; j < 6; ++j) c.logits[rng() % n_vocab] = 7.0f + 3.0f * unit(rng);
    }
    auto& p = c.params;
    p.temperature = pick({0.0f, 0.25f, 0.7f, 1.0f, 1.6f});
    p.top_k = pick({1, 2, 7, 40, 333, k_max, k_max, 0, k_max + 1});
    p.top_p = pick({1.0f, 1.0f, 0.95f, 0.6f, 0.2f});
    p.min_p = pick({0.0f, 0.0f, 0.05f, 0.3f});
    if (rng() % 2) {
      p.repeat_penalty = pick({1.0f, 1.15f, 1.8f});
      p.presence_penalty = pick({0.0f, 0.4f});
      p.frequency_penalty = pick({0.0f, 0.25f, -0.3f});
      // A window over the likely tokens and random ones.
      std::vector<int32_t> order(n_vocab);
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + 50, order.end(),
                        [&](int32_t a, int32_t b) { return c.logits[a] > c.logits[b]; });
      std::vector<int32_t> window;
      const int len = 1 + static_cast<int>(rng() % 80);
      for (int j = 0; j < len; ++j)
        window.push_back(rng() % 2 ? order[rng() % 50] : static_cast<int32_t>(rng() % n_vocab));
      std::sort(window.begin(), window.end());
      for (int32_t t : window)
        if (!c.penalties.empty() && c.penalties.back().token == t)
          ++c.penalties.back().count;
        else
          c.penalties.push_back({t, 1});
    }
    const uint32_t r = rng() % 16;
    c.u = r == 0 ? 0.0f : r == 1 ? 1.0f - 0x1p-24f : runtime::uniform_from_bits(static_cast<uint32_t>(rng()));
  }
  return cases;
}

}  // namespace rayo::test
