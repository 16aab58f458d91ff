#pragma once
// Token sampling with llama.cpp's parameters, meanings and chain order:
// penalties -> top-k -> top-p -> min-p -> temperature -> random draw.
// temperature <= 0 is greedy (argmax after penalties).
//
// The chain is a pure function of (logits, parameters, penalty history, one
// uniform number u): sample_with_uniform. A Sampler adds the state around it
// (its random generator and the token history), so the CUDA backend can run
// the same function on the device (backends/cuda/kernels/sample.cu) with u
// and the penalties the host's Sampler supplies, and draw the same token.
#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <vector>

#include "graph/backend.h"

namespace rayo::runtime {

// How a caller spells each sampling parameter in its error messages: the
// CLI's flags, or the API's and the HTTP requests' field names.
struct SamplingNames {
  const char *temperature, *top_p, *min_p, *repeat_penalty, *repeat_last_n, *presence_penalty, *frequency_penalty;
};
inline constexpr SamplingNames kCliSamplingNames{"--temp",           "--top-p",          "--min-p",
                                                  "--repeat-penalty", "--repeat-last-n",  "--presence-penalty",
                                                  "--frequency-penalty"};
inline constexpr SamplingNames kApiSamplingNames{"temperature",    "top_p",           "min_p",
                                                  "repeat_penalty", "repeat_last_n",   "presence_penalty",
                                                  "frequency_penalty"};

struct SamplingParams {
  float temperature = 0.8f;
  int top_k = 40;             // <= 0: all tokens
  float top_p = 0.95f;        // 1: off
  float min_p = 0.05f;        // 0: off
  float repeat_penalty = 1.0f;     // 1: off; divides positive logits, multiplies negative ones
  int repeat_last_n = 64;          // history the penalties look at; 0: off, -1: whole context
  float presence_penalty = 0.0f;   // subtracted once from every token seen
  float frequency_penalty = 0.0f;  // subtracted per occurrence
  uint32_t seed = 0xFFFFFFFFu;     // 0xFFFFFFFF: a random seed

  // Checks ranges; throws rayo::Error naming the bad parameter as `names` spell it.
  void validate(const SamplingNames& names = kCliSamplingNames) const;
  // Whether a penalty parameter is set: otherwise the penalties change no logit.
  bool penalises() const;
};

// A token of the penalty window and how often it occurs there.
struct PenaltyEntry {
  int32_t token = 0;
  int32_t count = 0;
  bool operator==(const PenaltyEntry&) const = default;
};

// Buffers sample_with_uniform reuses from call to call (so that a Sampler
// allocates nothing per token once they have grown to the vocabulary).
struct SamplingWorkspace {
  struct Candidate {
    int32_t id;
    float logit;
  };
  std::vector<Candidate> candidates;
  std::vector<float> weights;
};

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
};

struct GeneratedToken {
  int32_t id = 0;
  float logprob = 0;               // log-softmax of the model's logits (when asked for)
  std::vector<TokenLogprob> top;   // the most likely alternatives, best first
};

// `id` with its log-softmax over `logits` (the model's, before the sampling
// chain) and the `top` most likely tokens, best first (ties: lower id first).
GeneratedToken token_logprobs(int32_t id, std::span<const float> logits, int top);

// The whole chain on one row of logits (the vocabulary is logits.size()):
//  1. penalties (if params.penalises()): for each entry whose token is in the
//     vocabulary (tokens distinct), logit /= repeat_penalty if positive, else
//     *= repeat_penalty; then logit -= count * frequency_penalty +
//     presence_penalty (float). The window (repeat_last_n) is the caller's:
//     `penalties` is what it holds (Sampler::penalties()).
//  2. temperature <= 0: the largest penalised logit, the lowest id on ties;
//     u is not used.
//  3. top-k (0 < top_k < vocabulary): the k largest by (logit descending, id
//     ascending), in that order; otherwise every token, in id order.
//  4. top-p (< 1): with e_i = exp(logit_i - max) (float) and their sum in
//     double (candidate order), the shortest prefix of the sorted order whose
//     running double sum of float(e_i / sum) reaches top_p.
//     min-p (> 0): drops logits below max + log(min_p) (float), keeping order.
//     temperature: logit / temperature.
//     The draw: pick_by_uniform over the softmax numerators exp(logit - max)
//     (float), in candidate order, with u in [0, 1).
// Deterministic given its arguments: the CUDA kernel computes the same
// operations in the same order and precision.
int32_t sample_with_uniform(std::span<const float> logits, const SamplingParams& params,
                            std::span<const PenaltyEntry> penalties, float u, SamplingWorkspace& workspace);
int32_t sample_with_uniform(std::span<const float> logits, const SamplingParams& params,
                            std::span<const PenaltyEntry> penalties, float u);

// The inverse-CDF draw: the first index whose running weight sum (double,
// in index order) exceeds u * total, total being the sum of all weights
// (double, the same order), so that index i has probability weights[i] / total.
// When rounding or non-finite weights leave the target unreached, the last
// index with a positive weight, else 0. Weights must not be empty.
size_t pick_by_uniform(std::span<const float> weights, float u);

// A uniform float in [0, 1) from the top 24 bits of a 32-bit random word: a
// multiple of 2^-24, each of the 2^24 values equally likely (a float holds 24
// bits exactly, so no rounding can reach 1).
inline float uniform_from_bits(uint32_t bits) { return static_cast<float>(bits >> 8) * 0x1p-24f; }

class Sampler {
 public:
  Sampler(const SamplingParams& params, int64_t n_vocab);

  // Chooses the next token from one row of logits (n_vocab values):
  // sample_with_uniform with penalties() and, unless greedy, next_uniform().
  int32_t sample(std::span<const float> logits);
  // Records a token of the sequence (prompt or generated) for the penalties.
  void accept(int32_t token);
  void reset_history() { history_.clear(); }

  // The u of the next non-greedy sample: advances the generator by exactly
  // one 32-bit word (uniform_from_bits of it). sample() calls it once per
  // non-greedy token and never for a greedy one; a caller that samples
  // elsewhere (on the GPU) calls it instead of sample(), so the stream stays
  // the one the CPU would have used.
  float next_uniform() { return uniform_from_bits(static_cast<uint32_t>(rng_())); }
  // The penalty window as (token, count), ascending token id, only tokens of
  // the vocabulary; empty when the penalties are off or nothing was seen.
  std::vector<PenaltyEntry> penalties() const;
  // What has a backend draw the token sample() would (graph::SampleRequest):
  // the parameters, the penalty window (kept in `window`, which must outlive
  // the request) and, unless greedy, next_uniform().
  graph::SampleRequest backend_request(std::vector<graph::TokenCount>& window);
  // The token a request from backend_request draws from `logits`, drawn here
  // (when the backend left the row to the host): the same u, the same token.
  int32_t sample_request(std::span<const float> logits, const graph::SampleRequest& request) const;

  uint32_t seed() const { return seed_; }
  const SamplingParams& params() const { return params_; }
  int64_t n_vocab() const { return n_vocab_; }

 private:
  void collect_penalties(std::vector<PenaltyEntry>& out) const;
  SamplingParams params_;
  int64_t n_vocab_;
  uint32_t seed_;
  std::mt19937 rng_;
  std::deque<int32_t> history_;
  SamplingWorkspace workspace_;
  std::vector<PenaltyEntry> penalty_buffer_;
  mutable std::vector<int32_t> sorted_history_;
};

// Index of the largest logit (the first one on ties).
int32_t argmax(std::span<const float> logits);

}  // namespace rayo::runtime
