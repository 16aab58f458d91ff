// The prompts llama.cpp tokenized when it recorded shared/reference/*.json must
// give the same ids here (with BOS where the model asks for it).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gguf/file.h"
#include "support/paths.h"
#include "tokenizer/tokenizer.h"

namespace rayo::tokenizer {
namespace {

TEST(TokenizerReference, PromptsGiveLlamaCppTokens) {
  RAYO_REQUIRE_SHARED();
  size_t checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::shared_path("reference"))) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const auto ref = nlohmann::json::parse(in);
    if (!ref.contains("cases") || !ref.contains("model")) continue;
    const auto model = test::shared_path("models/" + ref["model"].get<std::string>());
    SCOPED_TRACE(entry.path().filename().string());
    const auto file = gguf::File::open(model.string());
    const Tokenizer tok = Tokenizer::from_gguf(file);
    EXPECT_EQ(tok.n_vocab(), ref["n_vocab"].get<int32_t>());
    for (const auto& c : ref["cases"]) {
      const std::string prompt = c["prompt"].get<std::string>();
      const auto expected = c["tokens"].get<std::vector<int32_t>>();
      EXPECT_EQ(tok.encode(prompt, /*add_special=*/true, /*parse_special=*/false), expected) << prompt;
      ++checked;
    }
  }
  EXPECT_GT(checked, 20u);
}

}  // namespace
}  // namespace rayo::tokenizer
