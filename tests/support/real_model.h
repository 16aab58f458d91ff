#pragma once
// The real trained model the set-up fetches (scripts/fetch-models.sh:
// SmolLM2-135M-Instruct Q4_1 in .cache/models/, or $RAYO_MODEL_CACHE) and
// llama.cpp's committed reference outputs for it (tests/data/smollm2/).
#include <filesystem>
#include <string>
#include <vector>

#include "support/reference.h"

namespace rayo::test {

// Where the set-up puts the model; it may be absent (no network at set-up).
std::filesystem::path real_model_path();

// A file of the committed reference data, e.g. real_model_data("chats.json").
std::filesystem::path real_model_data(const std::string& relative);

// Empty when the model is there, else why it is not, for GTEST_SKIP.
std::string real_model_absent();

// llama.cpp's references for the real model: plain-text prompts, and
// conversations rendered with the model's chat template.
std::vector<ReferenceModel> real_reference_models();

// The real Whisper tiny.en, in CTranslate2's format (scripts/fetch-models.sh:
// whisper-tiny.en/ under the same cache), and why it is absent when it is.
std::filesystem::path real_whisper_dir();
std::string real_whisper_absent();

// Skips the calling test, saying why, when the real model was not fetched.
#define RAYO_REQUIRE_REAL_MODEL()                                                             \
  do {                                                                                        \
    if (const std::string why = ::rayo::test::real_model_absent(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

}  // namespace rayo::test
