#pragma once
// llama.cpp's reference outputs for the shared models (shared/reference/MODEL.json)
// and for the real model (tests/data/smollm2/), in refgen's layout.
#include <cstdint>
#include <filesystem>
#include <ostream>
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

// A model to hold to a reference: the reference's file, the folder holding the
// GGUF file it names (Reference::model), and why the model is missing when it
// is, for GTEST_SKIP.
struct ReferenceModel {
  std::string name;  // labels the test; also picks the tolerance (logit_tolerance)
  std::filesystem::path reference;
  std::filesystem::path model_dir;
  std::string absent;  // empty when the model is there
  // llama.cpp's outputs on the same weights dequantized to F32 (the same
  // prompts): when given, rayo's teacher-forced logits are held to being as
  // close to these as llama.cpp's are, rather than to llama.cpp's within the
  // tolerance. A deep real model's logits move by up to about 1 between two
  // correct engines (the 8-bit activations round every small difference of the
  // layers before into a different quantization), as they do from the exact ones.
  std::filesystem::path exact = {};
  // A synthetic model (support/synth_models.h): `rayo synth` arguments that
  // make the file Reference::model names, in a scratch folder, before the test.
  std::string synth_args = {};
};

// gtest prints a parameter by its name.
inline void PrintTo(const ReferenceModel& m, std::ostream* os) { *os << m.name; }

// Every shared model with a reference; none when shared/ is absent.
std::vector<ReferenceModel> shared_reference_models();

// Model files that have a reference, by name (e.g. "synth-llama-q4_k_m").
std::vector<std::string> reference_model_names();

// How many of a case's greedy steps two engines must agree on: those before
// the first decision where llama.cpp's own top-1/top-2 margin is at most
// `tolerance` (there the two may legitimately part).
size_t greedy_steps_before_near_tie(const ReferenceCase& c, double tolerance);

// Tolerance on logits from the issue: 0.05 for float models, 0.3 for quantized ones.
double logit_tolerance(const std::string& model_name);

}  // namespace rayo::test
