// Byte-level BPE on hand-made vocabularies, and llama.cpp's pre-tokenizer regexes.
#include <gtest/gtest.h>

#include "common/error.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer_toy_vocab.h"

namespace rayo::tokenizer {
namespace {

using test::bpe_spec;
using test::texts;
using V = std::vector<std::string>;

std::vector<std::string> split(const std::string& pre, const std::string& text) {
  std::vector<std::string> out;
  for (const Span& s : PreTokenizer(pre).split(text)) out.push_back(text.substr(s.begin, s.size));
  return out;
}

TEST(TokenizerBpe, MergesLowestRankFirst) {
  const auto first = Tokenizer::from_spec(bpe_spec("gpt-2", {"a b", "b c"}));
  EXPECT_EQ(texts(first, first.encode("abc", false, false)), (V{"ab", "c"}));
  const auto second = Tokenizer::from_spec(bpe_spec("gpt-2", {"b c", "a b"}));
  EXPECT_EQ(texts(second, second.encode("abc", false, false)), (V{"a", "bc"}));
}

TEST(TokenizerBpe, MergesBuildOnEarlierMergesAndUseTheByteMap) {
  const auto tok = Tokenizer::from_spec(
      bpe_spec("gpt-2", {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "o r"}));  // "Ġ w"
  const auto ids = tok.encode("hello world", false, false);
  EXPECT_EQ(texts(tok, ids), (V{"hello", "\xC4\xA0w", "or", "l", "d"}));
  EXPECT_EQ(tok.decode(ids, false), "hello world");
}

TEST(TokenizerBpe, IgnoreMergesTakesWholeWordTokens) {
  // "abc" is a token that the merges cannot build ("a b" then "ab c" is absent).
  const std::vector<std::pair<std::string, int32_t>> extra = {{"abc", 1}};
  const auto gpt2 = Tokenizer::from_spec(bpe_spec("gpt-2", {"a b"}, extra));
  EXPECT_EQ(texts(gpt2, gpt2.encode("abc", false, false)), (V{"ab", "c"}));
  const auto llama3 = Tokenizer::from_spec(bpe_spec("llama-bpe", {"a b"}, extra));
  EXPECT_EQ(texts(llama3, llama3.encode("abc", false, false)), (V{"abc"}));
  EXPECT_TRUE(llama3.add_bos());  // llama.cpp's default for this pre-tokenizer
}

TEST(TokenizerBpe, Llama3Split) {
  EXPECT_EQ(split("llama-bpe", "Hello  world\n\n123456 'S I'm"),
            (V{"Hello", " ", " world", "\n\n", "123", "456", " '", "S", " I", "'m"}));
}

TEST(TokenizerBpe, Gpt2Split) {
  EXPECT_EQ(split("gpt-2", "Hello  world's 12345!!\t\tx"),
            (V{"Hello", " ", " world", "'s", " 12345", "!!", "\t", "\t", "x"}));
}

TEST(TokenizerBpe, Qwen2SplitsDigitsOneByOne) {
  EXPECT_EQ(split("qwen2", "x2024"), (V{"x", "2", "0", "2", "4"}));
}

TEST(TokenizerBpe, NonAsciiWhitespaceAndLettersFollowLlamaCpp) {
  // U+3000 is whitespace; "é" a letter; U+2028 whitespace.
  EXPECT_EQ(split("llama-bpe", "caf\xC3\xA9\xE3\x80\x80x"), (V{"caf\xC3\xA9", "\xE3\x80\x80x"}));
}

TEST(TokenizerBpe, RegexTranslationKeepsLlamaCppQuirks) {
  // \s is llama.cpp's White_Space set; letter subcategories mean any letter.
  EXPECT_EQ(llama_regex_to_pcre2(R"(\p{S}\p{Lu})"), R"(\p{S}\p{L})");
  const std::string ws = llama_regex_to_pcre2(R"([^\s\p{L}])");
  EXPECT_NE(ws.find("\\x{3000}"), std::string::npos);
  EXPECT_EQ(llama_regex_to_pcre2("(a)(?:b)"), "(?:a)(?:b)");
}

TEST(TokenizerBpe, UnknownPreTokenizerIsAnErrorNamingIt) {
  try {
    Tokenizer::from_spec(bpe_spec("no-such-pre", {"a b"}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-pre"), std::string::npos) << e.what();
  }
}

TEST(TokenizerBpe, InvalidUtf8BecomesReplacementCharacters) {
  const auto tok = Tokenizer::from_spec(bpe_spec("gpt-2", {}));
  const auto ids = tok.encode("a\xFF" "b", false, false);
  EXPECT_EQ(tok.decode(ids, false), "a\xEF\xBF\xBD" "b");
}

TEST(TokenizerBpe, NulBytesAndEmptyText) {
  const auto tok = Tokenizer::from_spec(bpe_spec("llama-bpe", {}));
  EXPECT_TRUE(tok.encode("", false, false).empty());
  const std::string nul("a\0b\0", 4);
  EXPECT_EQ(tok.decode(tok.encode(nul, false, false), false), nul);
}

TEST(TokenizerBpe, OneHugeWord) {
  const auto tok = Tokenizer::from_spec(bpe_spec("gpt-2", {"a b", "ab ab", "abab abab"}));
  std::string text;
  for (int i = 0; i < (1 << 19); ++i) text += "ab";  // 1 MB, one word
  const auto ids = tok.encode(text, false, false);
  EXPECT_EQ(ids.size(), static_cast<size_t>(1 << 17));
  EXPECT_EQ(tok.decode(ids, false), text);
}

}  // namespace
}  // namespace rayo::tokenizer
