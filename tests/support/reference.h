#pragma once
// llama.cpp's reference outputs for the shared models (shared/reference/MODEL.json).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rayo::test {

struct ReferenceLogits {
  double lse = 0;                                // log-sum-exp of all logits
  std::vector<std::pair<int32_t, double>> top;   // largest logits, descending
};

struct ReferenceCase {
  std::string prompt;
  std::vector<int32_t> tokens;                 // llama.cpp's tokenization (with BOS where asked)
  std::vector<ReferenceLogits> prompt_logits;  // after each prompt token
  std::vector<int32_t> greedy;                 // argmax continuation
  std::vector<ReferenceLogits> greedy_logits;  // after each greedy token (top-5)
  std::string greedy_text;
};

struct Reference {
  std::string model;  // file name under shared/models
  int64_t n_vocab = 0;
  std::vector<ReferenceCase> cases;
};

Reference load_reference(const std::string& path);

// Model files that have a reference, by name (e.g. "synth-llama-q4_k_m").
std::vector<std::string> reference_model_names();

// Tolerance on logits from the issue: 0.05 for float models, 0.3 for quantized ones.
double logit_tolerance(const std::string& model_name);

}  // namespace rayo::test
