// Special tokens on real vocabularies, as llama.cpp treats them.
#include <gtest/gtest.h>

#include "gguf/file.h"
#include "support/paths.h"
#include "tokenizer/tokenizer.h"

namespace rayo::tokenizer {
namespace {

Tokenizer load(const std::string& vocab) {
  const auto file = gguf::File::open(test::shared_path("vocab/ggml-vocab-" + vocab + ".gguf").string());
  return Tokenizer::from_gguf(file);
}

TEST(TokenizerSpecialReal, Gpt2EndOfTextIsOneTokenOnlyWhenParsed) {
  RAYO_REQUIRE_SHARED();
  const Tokenizer tok = load("gpt-2");
  EXPECT_EQ(tok.encode("<|endoftext|>", false, true), (std::vector<int32_t>{50256}));
  EXPECT_GT(tok.encode("<|endoftext|>", false, false).size(), 1u);
  EXPECT_TRUE(tok.is_eog(50256));
  EXPECT_EQ(tok.eos(), 50256);
  EXPECT_EQ(tok.decode(std::vector<int32_t>{50256}, false), "");
  EXPECT_EQ(tok.decode(std::vector<int32_t>{50256}, true), "<|endoftext|>");
}

TEST(TokenizerSpecialReal, Phi3SpecialTokensEatTheWhitespaceAfterThem) {
  RAYO_REQUIRE_SHARED();
  const Tokenizer tok = load("phi-3");
  const int32_t end = 32007;
  ASSERT_EQ(tok.token_text(end), "<|end|>");
  const auto ids = tok.encode("<|end|>\n  hi", false, true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], end);
  EXPECT_EQ(ids, tok.encode("<|end|>hi", false, true));
  EXPECT_TRUE(tok.is_eog(end));
  EXPECT_TRUE(tok.is_eog(tok.eos()));
}

TEST(TokenizerSpecialReal, Llama3StyleVocabularyAddsBos) {
  RAYO_REQUIRE_SHARED();
  const Tokenizer tok = load("gpt2-pre-llama-bpe");
  EXPECT_EQ(tok.pre_name(), "llama-bpe");
  EXPECT_TRUE(tok.add_bos());
  const auto ids = tok.encode("Hello", true, false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], tok.bos());
}

}  // namespace
}  // namespace rayo::tokenizer
