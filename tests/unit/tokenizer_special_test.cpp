// Special tokens in the text: parse_special, user-defined tokens, longest first,
// rstrip (Phi-3), end-of-generation set, bad vocabularies.
#include <gtest/gtest.h>

#include "common/error.h"
#include "tokenizer_toy_vocab.h"

namespace rayo::tokenizer {
namespace {

using test::bpe_spec;
using test::spm_spec;
using test::texts;
using V = std::vector<std::string>;

TEST(TokenizerSpecial, ControlTokensOnlyWithParseSpecial) {
  const auto tok = Tokenizer::from_spec(bpe_spec("qwen2", {"h i"}, {{"<|im_start|>", 3}, {"<|im_end|>", 3}}));
  const auto on = tok.encode("<|im_start|>hi<|im_end|>", false, true);
  EXPECT_EQ(texts(tok, on), (V{"<|im_start|>", "hi", "<|im_end|>"}));
  const auto off = tok.encode("<|im_start|>hi", false, false);
  EXPECT_GT(off.size(), 3u);  // spelt as ordinary text
  EXPECT_EQ(tok.decode(off, false), "<|im_start|>hi");
  // Shown or hidden on request.
  EXPECT_EQ(tok.decode(on, false), "hi");
  EXPECT_EQ(tok.decode(on, true), "<|im_start|>hi<|im_end|>");
  EXPECT_EQ(tok.token_to_piece(on[0], false), "");
  EXPECT_EQ(tok.token_to_piece(on[0], true), "<|im_start|>");
}

TEST(TokenizerSpecial, UserDefinedTokensAreAlwaysWhole) {
  const auto tok = Tokenizer::from_spec(bpe_spec("gpt-2", {}, {{"<tool>", 4}}));
  EXPECT_EQ(texts(tok, tok.encode("a<tool>b", false, false)), (V{"a", "<tool>", "b"}));
  EXPECT_EQ(tok.decode(tok.encode("a<tool>b", false, false), false), "a<tool>b");
}

TEST(TokenizerSpecial, LongestTokenTakesPrecedence) {
  // llama.cpp splits "ABC" out first, so "xA" never matches.
  const auto tok = Tokenizer::from_spec(bpe_spec("gpt-2", {}, {{"xA", 4}, {"ABC", 4}}));
  EXPECT_EQ(texts(tok, tok.encode("xABCy", false, false)), (V{"x", "ABC", "y"}));
  EXPECT_EQ(texts(tok, tok.encode("xAxA", false, false)), (V{"xA", "xA"}));
}

TEST(TokenizerSpecial, SpmAddsSpaceAfterSpecialTokens) {
  auto spec = spm_spec({{"\xE2\x96\x81", -1}, {"h", -1}, {"\xE2\x96\x81h", -0.5f}});
  const auto tok = Tokenizer::from_spec(spec);
  EXPECT_EQ(texts(tok, tok.encode("h</s>h", false, true)), (V{"\xE2\x96\x81h", "</s>", "\xE2\x96\x81h"}));
}

TEST(TokenizerSpecial, Phi3SpecialTokensSwallowFollowingWhitespace) {
  auto spec = spm_spec({{"\xE2\x96\x81", -1}, {"h", -1}, {"\xE2\x96\x81h", -0.5f}});
  spec.tokens.push_back("<|end|>");
  spec.scores.push_back(0);
  spec.token_types.push_back(3);
  spec.general_name = "Phi3";
  const auto tok = Tokenizer::from_spec(spec);
  EXPECT_EQ(texts(tok, tok.encode("h<|end|> \n h", false, true)), (V{"\xE2\x96\x81h", "<|end|>", "\xE2\x96\x81h"}));
  spec.general_name = "other";
  const auto plain = Tokenizer::from_spec(spec);
  EXPECT_GT(plain.encode("h<|end|> \n h", false, true).size(), 3u);
}

TEST(TokenizerSpecial, EndOfGenerationSet) {
  auto spec = bpe_spec("qwen2", {}, {{"<|endoftext|>", 3}, {"<|im_start|>", 3}, {"<|im_end|>", 3}});
  spec.eos_id = 256;  // <|endoftext|>
  const auto tok = Tokenizer::from_spec(spec);
  EXPECT_TRUE(tok.is_eog(256));
  EXPECT_FALSE(tok.is_eog(257));
  EXPECT_TRUE(tok.is_eog(258));
  EXPECT_EQ(tok.eot(), 256);  // first text llama.cpp recognises, lowest id
  EXPECT_FALSE(tok.add_bos());
}

TEST(TokenizerSpecial, BadVocabulariesAreClearErrors) {
  auto dup = bpe_spec("gpt-2", {});
  dup.tokens.push_back("a");
  dup.token_types.push_back(1);
  EXPECT_THROW(Tokenizer::from_spec(dup), Error);

  auto unknown = spm_spec({});
  unknown.model = "wordpiece-x";
  EXPECT_THROW(Tokenizer::from_spec(unknown), Error);

  auto no_bos = bpe_spec("gpt-2", {});
  no_bos.add_bos = true;
  no_bos.bos_id = 100000;  // out of range, and the default 11 is "," -> still a BOS
  EXPECT_NO_THROW(Tokenizer::from_spec(no_bos));
  auto glm = bpe_spec("chatglm-bpe", {});
  glm.add_bos = true;
  EXPECT_THROW(Tokenizer::from_spec(glm), Error);

  auto short_types = spm_spec({});
  short_types.token_types.pop_back();
  EXPECT_THROW(Tokenizer::from_spec(short_types), Error);

  TokenizerSpec empty;
  empty.model = "llama";
  EXPECT_THROW(Tokenizer::from_spec(empty), Error);
}

TEST(TokenizerSpecial, OutOfRangeIdsAreErrors) {
  const auto tok = Tokenizer::from_spec(bpe_spec("gpt-2", {}));
  EXPECT_THROW(tok.token_to_piece(-1, true), Error);
  EXPECT_THROW(tok.token_to_piece(tok.n_vocab(), true), Error);
  const std::vector<int32_t> bad = {0, 1 << 30};
  EXPECT_THROW(tok.decode(bad, false), Error);
  EXPECT_THROW(tok.token_text(-5), Error);
}

}  // namespace
}  // namespace rayo::tokenizer
