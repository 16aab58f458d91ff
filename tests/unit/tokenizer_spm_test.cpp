// SentencePiece-style tokenization on hand-made vocabularies: merge order by
// score, stale pairs, ties, byte fallback, unknown characters, the leading space.
#include <gtest/gtest.h>

#include "tokenizer_toy_vocab.h"

namespace rayo::tokenizer {
namespace {

using test::spm_spec;
using test::texts;
using V = std::vector<std::string>;

const char* const kSp = "\xE2\x96\x81";  // ▁

TEST(TokenizerSpm, MergesHighestScoreFirstAndSkipsStalePairs) {
  const auto tok = Tokenizer::from_spec(spm_spec({{kSp, -1}, {"a", -1}, {"b", -1}, {"c", -1}, {"ab", -2},
                                                  {"bc", -0.5f}, {"abc", -3}, {std::string(kSp) + "a", -4}}));
  // "▁abc": "bc" (best) first, then "a"+"bc"; "ab" and "▁a" are stale by then.
  EXPECT_EQ(texts(tok, tok.encode("abc", false, false)), (V{kSp, "abc"}));
}

TEST(TokenizerSpm, EqualScoresMergeLeftmostFirst) {
  const auto tok = Tokenizer::from_spec(spm_spec({{kSp, -1}, {"a", -1}, {"aa", -1}}));
  EXPECT_EQ(texts(tok, tok.encode("aaa", false, false)), (V{kSp, "aa", "a"}));
}

TEST(TokenizerSpm, AddsBosAndLeadingSpaceAndRemovesItOnDecode) {
  const auto tok = Tokenizer::from_spec(spm_spec({{kSp, -1}, {"h", -1}, {"i", -1}, {"hi", -1},
                                                  {std::string(kSp) + "hi", -0.5f}}));
  EXPECT_TRUE(tok.add_bos());
  EXPECT_EQ(tok.bos(), 1);
  EXPECT_EQ(tok.eos(), 2);
  const auto ids = tok.encode("hi hi", true, false);
  EXPECT_EQ(texts(tok, ids), (V{"<s>", std::string(kSp) + "hi", std::string(kSp) + "hi"}));
  // As in llama.cpp, only the very first token loses its leading space: after
  // BOS (an empty piece when special tokens are hidden) the space stays.
  EXPECT_EQ(tok.decode(ids, false), " hi hi");
  EXPECT_EQ(tok.decode(ids, true), "<s> hi hi");
  EXPECT_EQ(tok.decode(tok.encode("hi hi", false, false), false), "hi hi");
  EXPECT_EQ(tok.decode(tok.encode(" hi", false, false), false), " hi");
}

TEST(TokenizerSpm, SpacePrefixCanBeTurnedOff) {
  auto spec = spm_spec({{kSp, -1}, {"h", -1}, {"i", -1}});
  spec.add_space_prefix = false;
  const auto tok = Tokenizer::from_spec(spec);
  EXPECT_EQ(texts(tok, tok.encode("hi", false, false)), (V{"h", "i"}));
}

TEST(TokenizerSpm, BytesWithoutTokensUseByteTokens) {
  const auto tok = Tokenizer::from_spec(spm_spec({{kSp, -1}, {"a", -1}}));
  const auto ids = tok.encode("a\xC3\xA9", false, false);  // "aé"
  EXPECT_EQ(texts(tok, ids), (V{kSp, "a", "<0xC3>", "<0xA9>"}));
  EXPECT_EQ(tok.decode(ids, false), "a\xC3\xA9");
}

TEST(TokenizerSpm, CharactersWithoutAnyTokenBecomeUnknown) {
  const auto tok = Tokenizer::from_spec(spm_spec({{kSp, -1}, {"a", -1}}, /*bytes=*/false));
  EXPECT_EQ(texts(tok, tok.encode("a\xC3\xA9", false, false)), (V{kSp, "a", "<unk>", "<unk>"}));
}

TEST(TokenizerSpm, InvalidUtf8IsSpeltWithByteTokensAndComesBack) {
  const auto tok = Tokenizer::from_spec(spm_spec({{kSp, -1}, {"a", -1}}));
  const std::string text = "a\xFF\xC3(\xE2\x82";
  const auto ids = tok.encode(text, false, false);
  EXPECT_EQ(tok.decode(ids, false), text);
}

TEST(TokenizerSpm, AMegabyteOfOneCharacter) {
  const auto tok = Tokenizer::from_spec(spm_spec({{kSp, -1}, {"a", -1}, {"aa", -0.5f}, {"aaaa", -0.25f}}));
  const std::string text(1 << 20, 'a');
  const auto ids = tok.encode(text, false, false);
  EXPECT_EQ(ids.size(), 1u + (1u << 18));  // "▁" then "aaaa" x 262144
  EXPECT_EQ(tok.decode(ids, false), text);
}

TEST(TokenizerSpm, EmptyTextAndNulBytes) {
  const auto tok = Tokenizer::from_spec(spm_spec({{kSp, -1}, {"a", -1}}));
  EXPECT_TRUE(tok.encode("", false, false).empty());
  EXPECT_EQ(tok.encode("", true, false), (std::vector<int32_t>{1}));
  const std::string nul("a\0a", 3);
  EXPECT_EQ(tok.decode(tok.encode(nul, false, false), false), nul);
}

}  // namespace
}  // namespace rayo::tokenizer
