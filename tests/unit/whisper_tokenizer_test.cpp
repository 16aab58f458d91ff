// Whisper's tokenizer (whisper/whisper_tokenizer.h) on the real tiny.en
// vocabulary: faster-whisper's segment texts come back from their token ids,
// text encodes and decodes back, and the suppressed tokens faster-whisper
// resolved for suppress_tokens=[-1] are exactly the ones computed here. A
// synthetic multilingual vocabulary checks the start-of-transcript sequence.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "support/paths.h"
#include "support/real_model.h"
#include "whisper/whisper_tokenizer.h"

namespace rayo::whisper {
namespace {

#define REQUIRE_REAL_WHISPER()                                                          \
  do {                                                                                  \
    RAYO_REQUIRE_SHARED();                                                              \
    if (const auto why = test::real_whisper_absent(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

nlohmann::json reference(const std::string& name) {
  std::ifstream in(test::shared_path("whisper/reference/" + name));
  return nlohmann::json::parse(in);
}

// The real model's tokenizer, loaded once.
const WhisperTokenizer& real_tokenizer() {
  static const WhisperTokenizer tokenizer = [] {
    const std::string folder = test::real_whisper_dir().string();
    return WhisperTokenizer::from_files(load_ct2_whisper(folder));
  }();
  return tokenizer;
}

TEST(WhisperTokenizer, DecodesEveryReferenceSegmentToItsText) {
  REQUIRE_REAL_WHISPER();
  const auto& tok = real_tokenizer();
  size_t checked = 0;
  for (const char* file : {"faster-whisper-greedy-f32-timestamps.json", "faster-whisper-greedy-f32.json",
                           "faster-whisper-beam5-f32.json", "faster-whisper-greedy-int8.json"}) {
    const auto j = reference(file);
    for (const auto& [clip, segments] : j["segments"].items()) {
      for (const auto& s : segments) {
        const auto ids = s["tokens"].get<std::vector<int32_t>>();
        EXPECT_EQ(tok.decode(ids), s["text"].get<std::string>()) << file << " " << clip << " #" << s["id"];
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 20u);
}

TEST(WhisperTokenizer, EncodingRoundTripsAndGivesGpt2Ids) {
  REQUIRE_REAL_WHISPER();
  const auto& tok = real_tokenizer();
  ASSERT_TRUE(tok.can_encode());
  // GPT-2's ids, as in faster-whisper's token lists (" The quick", "," and ".").
  EXPECT_EQ(tok.encode(" The quick"), (std::vector<int32_t>{383, 2068}));
  EXPECT_EQ(tok.encode(", no."), (std::vector<int32_t>{11, 645, 13}));
  const auto j = reference("faster-whisper-greedy-f32-timestamps.json");
  for (const auto& [clip, text] : j["texts"].items()) {
    const std::string t = " " + text.get<std::string>();
    EXPECT_EQ(tok.decode(tok.encode(t)), t) << clip;
  }
  // Unicode beyond Latin-1 goes through the byte-level spelling and back.
  for (const std::string t : {" naïve café ♪ 日本語", "«quote» — dash"}) EXPECT_EQ(tok.decode(tok.encode(t)), t);
}

TEST(WhisperTokenizer, SuppressedTokensAreFasterWhispersResolvedList) {
  REQUIRE_REAL_WHISPER();
  const auto& tok = real_tokenizer();
  const auto j = reference("faster-whisper-greedy-f32-timestamps.json");
  const auto expected = j["settings"]["suppressed_tokens_resolved"].get<std::vector<int32_t>>();
  const std::vector<int32_t> defaults = {-1};
  EXPECT_EQ(tok.suppressed_tokens(defaults), expected);
  // Explicit ids are kept, the task and start tokens always added; none asked, none suppressed.
  const std::vector<int32_t> explicit_ids = {7, 3};
  EXPECT_EQ(tok.suppressed_tokens(explicit_ids),
            (std::vector<int32_t>{3, 7, 50257, 50357, 50358, 50359, 50360, 50361}));
  EXPECT_TRUE(tok.suppressed_tokens({}).empty());
}

TEST(WhisperTokenizer, SpecialAndTimestampTokensOfTinyEn) {
  REQUIRE_REAL_WHISPER();
  const auto& tok = real_tokenizer();
  EXPECT_FALSE(tok.multilingual());  // 51864 tokens, although config.json lists language ids
  // English-only models take <|startoftranscript|> alone, whatever the language and task.
  EXPECT_EQ(tok.sot_sequence("en", "transcribe"), (std::vector<int32_t>{50257}));
  EXPECT_EQ(tok.sot_sequence("", "translate"), (std::vector<int32_t>{50257}));
  EXPECT_THROW(tok.sot_sequence("en", "summarize"), Error);
  EXPECT_EQ(tok.language_token("en"), 50258);
  EXPECT_EQ(tok.language_code(50259), "zh");
  EXPECT_EQ(tok.language_code(50257), "");
  EXPECT_EQ(tok.language_token("xx"), -1);
  EXPECT_EQ(tok.language_tokens().size(), 99u);
  EXPECT_EQ(tok.language_token("he"), 50278);  // spelt <|iw|> in this vocabulary
  EXPECT_EQ(tok.language_code(50278), "he");
  EXPECT_EQ(tok.timestamp_seconds(50363), 0.0);
  EXPECT_DOUBLE_EQ(tok.timestamp_seconds(50538), 3.5);
  EXPECT_EQ(tok.timestamp_token(3.5), 50538);
  EXPECT_EQ(tok.timestamp_token(99.0), 51863);  // <|30.00|>, the last token
  EXPECT_EQ(tok.token_text(51863), "<|30.00|>");
  const std::vector<int32_t> ids = {50363, 383, 2068, 50538};
  EXPECT_EQ(tok.decode(ids), " The quick");
  EXPECT_EQ(tok.decode_with_timestamps(ids), "<|0.00|> The quick<|3.50|>");
}

TEST(WhisperTokenizer, InvalidUtf8BecomesOneReplacementPerBrokenSequence) {
  REQUIRE_REAL_WHISPER();
  const auto& tok = real_tokenizer();
  // "♪" is E2 99 AA: its byte-level spelling is "âĻª". Half of it is one U+FFFD
  // (as the `tokenizers` library's lossy decoding gives), not one per byte.
  const int32_t e2 = tok.token_id("â"), x99 = tok.token_id("Ļ"), xaa = tok.token_id("ª");
  ASSERT_GE(e2, 0);
  ASSERT_GE(x99, 0);
  ASSERT_GE(xaa, 0);
  const std::vector<int32_t> whole = {e2, x99, xaa}, half = {e2, x99}, stray = {xaa, xaa};
  EXPECT_EQ(tok.decode(whole), "♪");
  EXPECT_EQ(tok.decode(half), "\xEF\xBF\xBD");
  EXPECT_EQ(tok.decode(stray), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(WhisperTokenizer, VocabularyAloneDecodesButDoesNotEncode) {
  REQUIRE_REAL_WHISPER();
  const auto files = load_ct2_whisper(test::real_whisper_dir().string());
  const WhisperTokenizer tok(files.spec, files.vocabulary);
  EXPECT_FALSE(tok.can_encode());
  const std::vector<int32_t> ids = {50363, 383, 2068, 2835, 12, 69, 420, 42497, 50538};
  EXPECT_EQ(tok.decode(ids), " The quick round-foc stump");
  EXPECT_THROW(tok.encode("hello"), Error);
  // Without merges, -1 stands for the converter's list (the same for tiny.en).
  const std::vector<int32_t> defaults = {-1};
  const auto suppressed = tok.suppressed_tokens(defaults);
  EXPECT_EQ(suppressed, real_tokenizer().suppressed_tokens(defaults));
}

std::string special(std::string_view name) {
  std::string text = "<|";
  text += name;
  text += "|>";
  return text;
}

// A multilingual vocabulary laid out as Whisper's (51865 tokens): the start of
// transcript, 99 languages, the tasks, then the timestamps.
struct Multilingual {
  WhisperSpec spec;
  std::vector<std::string> vocabulary;
  Multilingual() {
    for (int i = 0; i < 50257; ++i) vocabulary.push_back(std::string("t").append(std::to_string(i)));
    vocabulary.push_back("<|endoftext|>");
    vocabulary.push_back("<|startoftranscript|>");
    const auto& codes = WhisperTokenizer::language_codes();
    for (size_t i = 0; i < 99; ++i) vocabulary.push_back(special(codes[i]));
    for (const char* s : {"<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>",
                          "<|notimestamps|>"})
      vocabulary.push_back(s);
    for (int i = 0; i <= 1500; ++i) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "<|%.2f|>", i * 0.02);
      vocabulary.push_back(buf);
    }
    spec.n_vocab = static_cast<uint32_t>(vocabulary.size());
    spec.eot = 50257;
    spec.sot = 50258;
    spec.translate = 50358;
    spec.transcribe = 50359;
    spec.sot_lm = 50360;
    spec.sot_prev = 50361;
    spec.no_speech = 50362;
    spec.no_timestamps = 50363;
    spec.timestamp_begin = 50364;
  }
};

TEST(WhisperTokenizer, MultilingualStartOfTranscriptHasLanguageAndTask) {
  const Multilingual m;
  ASSERT_EQ(m.vocabulary.size(), 51865u);
  const WhisperTokenizer tok(m.spec, m.vocabulary);
  EXPECT_TRUE(tok.multilingual());
  EXPECT_EQ(tok.sot_sequence("en", "transcribe"), (std::vector<int32_t>{50258, 50259, 50359}));
  EXPECT_EQ(tok.sot_sequence("de", "translate"), (std::vector<int32_t>{50258, 50261, 50358}));
  EXPECT_THROW(tok.sot_sequence("xx", "transcribe"), Error);
  EXPECT_THROW(tok.sot_sequence("", "transcribe"), Error);
  EXPECT_EQ(tok.language_code(50261), "de");
  EXPECT_EQ(tok.language_tokens().size(), 99u);
  EXPECT_EQ(tok.language_tokens().front(), 50259);
  EXPECT_EQ(tok.timestamp_token(30.0), 51864);
  // Text tokens decode from their spelling; specials and timestamps are skipped.
  const std::vector<int32_t> ids = {50258, 50259, 50359, 50364, 5, 51864};
  EXPECT_EQ(tok.decode(ids), "t5");
}

}  // namespace
}  // namespace rayo::whisper
