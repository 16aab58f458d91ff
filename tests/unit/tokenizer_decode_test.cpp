// Detokenizer: byte-exact pieces, llama.cpp's space clean-up, and the streaming
// decoder that never emits half a UTF-8 character.
#include <gtest/gtest.h>

#include <set>

#include "tokenizer/byte_encoding.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"
#include "tokenizer_toy_vocab.h"

namespace rayo::tokenizer {
namespace {

using test::bpe_spec;
using test::spm_spec;

TEST(TokenizerDecode, ByteMapIsAReversiblePermutation) {
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    const std::string_view c = byte_to_unicode(static_cast<uint8_t>(b));
    seen.insert(std::string(c));
    size_t pos = 0;
    EXPECT_EQ(unicode_to_byte(decode_utf8(c, pos)), b);
  }
  EXPECT_EQ(seen.size(), 256u);
  EXPECT_EQ(byte_to_unicode(' '), "\xC4\xA0");   // Ġ
  EXPECT_EQ(byte_to_unicode('\n'), "\xC4\x8A");  // Ċ
  EXPECT_EQ(byte_to_unicode('A'), "A");
  EXPECT_EQ(unicode_to_byte(0x4E00), -1);
}

TEST(TokenizerDecode, Utf8Helpers) {
  EXPECT_EQ(sanitize_utf8("ok \xC3\xA9"), "ok \xC3\xA9");
  EXPECT_EQ(sanitize_utf8("\xFF"), "\xEF\xBF\xBD");
  EXPECT_EQ(sanitize_utf8("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // cut short: one per byte
  EXPECT_EQ(sanitize_utf8("\xC0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80").size(), 9u);               // surrogate
  EXPECT_TRUE(is_valid_utf8("\xEF\xBF\xBD"));
  EXPECT_FALSE(is_valid_utf8("\xC3"));
  EXPECT_EQ(incomplete_utf8_tail("a\xF0\x9F\x9A"), 3u);
  EXPECT_EQ(incomplete_utf8_tail("a\xF0\x9F\x9A\x80"), 0u);
  EXPECT_EQ(incomplete_utf8_tail("a\xC3"), 1u);
  EXPECT_EQ(incomplete_utf8_tail("\x80\x80"), 0u);
}

TEST(TokenizerDecode, CleanUpSpacesLikeLlamaCpp) {
  auto clean = [](std::string s) {
    clean_up_spaces(s);
    return s;
  };
  EXPECT_EQ(clean("Hello , world !"), "Hello, world!");
  EXPECT_EQ(clean("it 's I 'm we 're they 've"), "it's I'm we're they've");
  EXPECT_EQ(clean("don 't I 'll"), "don 't I 'll");
  EXPECT_EQ(clean("a ' b"), "a'b");
  EXPECT_EQ(clean(""), "");
  EXPECT_EQ(clean(" ."), ".");
}

TEST(TokenizerDecode, Gpt2VocabulariesCleanUpAndQwen2DoesNot) {
  const auto gpt2 = Tokenizer::from_spec(bpe_spec("gpt-2", {}));
  EXPECT_EQ(gpt2.decode(gpt2.encode("Hi , there", false, false), false), "Hi, there");
  const auto qwen = Tokenizer::from_spec(bpe_spec("qwen2", {}));
  EXPECT_EQ(qwen.decode(qwen.encode("Hi , there", false, false), false), "Hi , there");
}

TEST(TokenizerDecode, StreamingNeverSplitsACharacter) {
  // Byte tokens only: every multi-byte character arrives one byte at a time.
  const auto tok = Tokenizer::from_spec(spm_spec({{"\xE2\x96\x81", -1}}));
  const std::string text = "x\xC3\xA9\xF0\x9F\x9A\x80\xE4\xBD\xA0 y";  // xé🚀你 y
  const auto ids = tok.encode(text, false, false);
  StreamingDecoder stream(tok, false);
  std::string joined;
  for (int32_t id : ids) {
    const std::string chunk = stream.push(id);
    EXPECT_TRUE(is_valid_utf8(chunk)) << "chunk of " << chunk.size() << " bytes";
    joined += chunk;
  }
  joined += stream.finish();
  EXPECT_EQ(joined, text);
  EXPECT_EQ(joined, tok.decode(ids, false));
}

TEST(TokenizerDecode, StreamingFlushesAnIncompleteTailAtTheEnd) {
  const auto tok = Tokenizer::from_spec(spm_spec({{"\xE2\x96\x81", -1}}));
  const auto ids = tok.encode("\xF0\x9F\x9A", false, false);  // three bytes of a four-byte character
  StreamingDecoder stream(tok, false);
  std::string joined;
  for (int32_t id : ids) joined += stream.push(id);
  EXPECT_EQ(joined, "");
  EXPECT_EQ(stream.finish(), "\xF0\x9F\x9A");
}

TEST(TokenizerDecode, StreamingShowsSpecialTokensOnRequest) {
  const auto tok = Tokenizer::from_spec(bpe_spec("qwen2", {}, {{"<|im_end|>", 3}}));
  const auto ids = tok.encode("a<|im_end|>", false, true);
  StreamingDecoder hidden(tok, false), shown(tok, true);
  std::string h, s;
  for (int32_t id : ids) {
    h += hidden.push(id);
    s += shown.push(id);
  }
  EXPECT_EQ(h + hidden.finish(), "a");
  EXPECT_EQ(s + shown.finish(), "a<|im_end|>");
}

}  // namespace
}  // namespace rayo::tokenizer
