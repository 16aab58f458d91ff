#include "support/real_model.h"

#include <cstdlib>

namespace rayo::test {

std::filesystem::path real_model_path() {
  // scripts/fetch-models.sh reads a relative $RAYO_MODEL_CACHE from the source root.
  std::filesystem::path cache = ".cache/models";
  if (const char* env = std::getenv("RAYO_MODEL_CACHE"); env && *env) cache = env;
  if (cache.is_relative()) cache = std::filesystem::path(RAYO_SOURCE_DIR) / cache;
  return cache / "SmolLM2-135M-Instruct.Q4_1.gguf";
}

std::filesystem::path real_model_data(const std::string& relative) {
  return std::filesystem::path(RAYO_SOURCE_DIR) / "tests" / "data" / "smollm2" / relative;
}

std::string real_model_absent() {
  const auto path = real_model_path();
  if (std::filesystem::is_regular_file(path)) return {};
  return "real model not found at " + path.string() + " (scripts/install-deps.sh fetches it with scripts/fetch-models.sh)";
}

std::filesystem::path real_whisper_dir() { return real_model_path().parent_path() / "whisper-tiny.en"; }

std::string real_whisper_absent() {
  const auto path = real_whisper_dir() / "model.bin";
  if (std::filesystem::is_regular_file(path)) return {};
  return "Whisper tiny.en not found at " + path.string() +
         " (scripts/install-deps.sh fetches it with scripts/fetch-models.sh)";
}

std::vector<ReferenceModel> real_reference_models() {
  const auto dir = real_model_path().parent_path();
  return {{"SmolLM2-135M-Instruct-Q4_1-plain", real_model_data("reference-plain.json"), dir, real_model_absent(),
           real_model_data("exact-plain.json")},
          {"SmolLM2-135M-Instruct-Q4_1-chat", real_model_data("reference-chat.json"), dir, real_model_absent(),
           real_model_data("exact-chat.json")}};
}

}  // namespace rayo::test
