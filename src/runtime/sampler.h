#pragma once
// Token sampling with llama.cpp's parameters, meanings and chain order:
// penalties -> top-k -> top-p -> min-p -> temperature -> random draw.
// temperature <= 0 is greedy (argmax after penalties).
#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <vector>

namespace rayo::runtime {

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

  // Checks ranges; throws rayo::Error naming the bad flag value.
  void validate() const;
};

class Sampler {
 public:
  Sampler(const SamplingParams& params, int64_t n_vocab);

  // Chooses the next token from one row of logits (n_vocab values).
  int32_t sample(std::span<const float> logits);
  // Records a token of the sequence (prompt or generated) for the penalties.
  void accept(int32_t token);
  void reset_history() { history_.clear(); }

  uint32_t seed() const { return seed_; }
  const SamplingParams& params() const { return params_; }

 private:
  struct Candidate {
    int32_t id;
    float logit;
  };
  void apply_penalties();
  SamplingParams params_;
  int64_t n_vocab_;
  uint32_t seed_;
  std::mt19937 rng_;
  std::deque<int32_t> history_;
  std::vector<Candidate> candidates_;
  std::vector<float> probs_;
};

// Index of the largest logit (the first one on ties).
int32_t argmax(std::span<const float> logits);

}  // namespace rayo::runtime
