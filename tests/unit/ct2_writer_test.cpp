// CTranslate2 Whisper folders with random weights (whisper/ct2_writer.h,
// whisper/whisper_presets.h): a written tiny.en lists exactly as the real
// model.bin does (../shared/whisper/reference/ct2-variables.txt: names,
// shapes, types, sizes, offsets, scalar values, the alias); tiny and tiny.en
// read back through load_ct2_whisper with every size and special token where
// the real models have them; every preset's vocabulary puts its special tokens
// at the real ids; `rayo synth --whisper` refuses bad input in one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/half.h"
#include "support/paths.h"
#include "support/real_model.h"
#include "whisper/ct2_model.h"
#include "whisper/ct2_writer.h"
#include "whisper/whisper_presets.h"
#include "whisper/whisper_spec.h"

namespace rayo::whisper {
namespace {

std::string shape_text(const std::vector<uint32_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Lines of ct2-variables.txt, as "name shape type bytes offset [value]", and the aliases' lines.
struct Listing {
  std::vector<std::string> variables, aliases;
  uint64_t file_size = 0;
};

Listing reference_listing() {
  Listing l;
  std::ifstream in(test::shared_path("whisper/reference/ct2-variables.txt"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# file_size: ", 0) == 0) l.file_size = std::stoull(line.substr(13));
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string word, joined;
    while (words >> word) joined += (joined.empty() ? "" : " ") + word;
    (line.rfind("alias ", 0) == 0 ? l.aliases : l.variables).push_back(joined);
  }
  return l;
}

// The same listing of a model read back.
Listing listing_of(const Ct2Model& m, uint64_t file_size) {
  Listing l;
  l.file_size = file_size;
  for (const Ct2Variable& v : m.variables()) {
    std::string line = v.name + " " + shape_text(v.shape) + " " + std::string(ct2_type_name(v.type)) + " " +
                       std::to_string(v.bytes.size()) + " " + std::to_string(v.offset);
    if (v.shape.empty()) line += " [" + std::to_string(m.integer(v.name)) + "]";
    l.variables.push_back(line);
  }
  for (const auto& [alias, target] : m.aliases()) l.aliases.push_back("alias " + alias + " -> " + target);
  return l;
}

class Ct2Writer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::temp_dir("ct2-writer");
    write_ct2_whisper(whisper_preset("tiny.en"), 42, (dir_ / "tiny.en").string());
    write_ct2_whisper(whisper_preset("tiny"), 42, (dir_ / "tiny").string());
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static inline std::filesystem::path dir_;
};

TEST_F(Ct2Writer, TinyEnListsExactlyAsTheRealModelBin) {
  RAYO_REQUIRE_SHARED();
  const Listing expected = reference_listing();
  ASSERT_EQ(expected.variables.size(), 148u);
  const std::string path = (dir_ / "tiny.en" / "model.bin").string();
  const Ct2Model m = Ct2Model::open(path);
  EXPECT_EQ(m.version(), 6u);
  EXPECT_EQ(m.spec_name(), "WhisperSpec");
  EXPECT_EQ(m.spec_revision(), 3u);
  const Listing got = listing_of(m, std::filesystem::file_size(path));
  ASSERT_EQ(got.variables.size(), expected.variables.size());
  for (size_t i = 0; i < got.variables.size(); ++i) EXPECT_EQ(got.variables[i], expected.variables[i]) << i;
  EXPECT_EQ(got.aliases, expected.aliases);
  EXPECT_EQ(got.file_size, expected.file_size);
}

TEST_F(Ct2Writer, TinyEnReadsBackWithTheRealSizesAndSpecialTokens) {
  const WhisperFiles f = load_ct2_whisper((dir_ / "tiny.en").string());
  const WhisperSpec& s = f.spec;
  EXPECT_EQ(s.n_mels, 80u);
  EXPECT_EQ(s.n_audio_ctx, 1500u);
  EXPECT_EQ(s.n_audio_state, 384u);
  EXPECT_EQ(s.n_audio_head, 6u);
  EXPECT_EQ(s.n_audio_layer, 4u);
  EXPECT_EQ(s.n_text_ctx, 448u);
  EXPECT_EQ(s.n_text_state, 384u);
  EXPECT_EQ(s.n_text_head, 6u);
  EXPECT_EQ(s.n_text_layer, 4u);
  EXPECT_EQ(s.n_vocab, 51864u);
  EXPECT_EQ(s.n_ffn, 1536u);
  // The ids ../shared/whisper/reference/model-config.json lists for the real tiny.en.
  EXPECT_EQ(s.eot, 50256);
  EXPECT_EQ(s.sot, 50257);
  EXPECT_EQ(f.vocabulary[50258], "<|en|>");
  EXPECT_EQ(f.vocabulary[50356], "<|su|>");
  EXPECT_EQ(std::count(f.vocabulary.begin(), f.vocabulary.end(), ""), 0);  // English-only: no empty token
  EXPECT_EQ(s.translate, 50357);
  EXPECT_EQ(s.transcribe, 50358);
  EXPECT_EQ(s.sot_lm, 50359);
  EXPECT_EQ(s.sot_prev, 50360);
  EXPECT_EQ(s.no_speech, 50361);
  EXPECT_EQ(f.vocabulary[50361], "<|nocaptions|>");
  EXPECT_EQ(s.no_timestamps, 50362);
  EXPECT_EQ(s.timestamp_begin, 50363);
  EXPECT_EQ(f.vocabulary[51863], "<|30.00|>");
  EXPECT_EQ(f.vocabulary[50363 + 777], "<|15.54|>");
  // config.json as the real one: 84 non-speech symbols and the 6 control tokens, ...
  ASSERT_EQ(s.suppress_ids.size(), 90u);
  EXPECT_EQ(s.suppress_ids[23], 357);
  EXPECT_EQ(std::vector<int32_t>(s.suppress_ids.end() - 6, s.suppress_ids.end()),
            (std::vector<int32_t>{50257, 50357, 50358, 50359, 50360, 50361}));
  EXPECT_EQ(s.suppress_ids_begin, (std::vector<int32_t>{220, 50256}));
  EXPECT_EQ(s.alignment_heads, (std::vector<std::pair<int32_t, int32_t>>{
                                   {1, 0}, {2, 0}, {2, 5}, {3, 0}, {3, 1}, {3, 2}, {3, 3}, {3, 4}}));
  // ... and the 98 language ids 50259..50356 its converter wrote (without <|en|>).
  ASSERT_EQ(s.lang_ids.size(), 98u);
  EXPECT_EQ(s.lang_ids.front(), 50259);
  EXPECT_EQ(s.lang_ids.back(), 50356);
}

TEST_F(Ct2Writer, TinyReadsBackAsAMultilingualModel) {
  const WhisperFiles f = load_ct2_whisper((dir_ / "tiny").string());
  const WhisperSpec& s = f.spec;
  EXPECT_EQ(s.n_mels, 80u);
  EXPECT_EQ(s.n_audio_state, 384u);
  EXPECT_EQ(s.n_audio_head, 6u);
  EXPECT_EQ(s.n_audio_layer, 4u);
  EXPECT_EQ(s.n_text_layer, 4u);
  EXPECT_EQ(s.n_vocab, 51865u);
  EXPECT_EQ(s.eot, 50257);
  EXPECT_EQ(s.sot, 50258);
  EXPECT_EQ(f.vocabulary[50256], "");  // how CTranslate2 4.x tells a multilingual model
  EXPECT_EQ(f.vocabulary[50259], "<|en|>");
  EXPECT_EQ(f.vocabulary[50260], "<|zh|>");
  EXPECT_EQ(f.vocabulary[50357], "<|su|>");
  EXPECT_EQ(s.translate, 50358);
  EXPECT_EQ(s.transcribe, 50359);
  EXPECT_EQ(s.sot_lm, 50360);
  EXPECT_EQ(s.sot_prev, 50361);
  EXPECT_EQ(s.no_speech, 50362);
  EXPECT_EQ(s.no_timestamps, 50363);
  EXPECT_EQ(s.timestamp_begin, 50364);
  EXPECT_EQ(f.vocabulary[51864], "<|30.00|>");
  ASSERT_EQ(s.lang_ids.size(), 99u);
  EXPECT_EQ(s.lang_ids.front(), 50259);
  EXPECT_EQ(s.lang_ids.back(), 50357);
  ASSERT_EQ(s.suppress_ids.size(), 88u);
  EXPECT_EQ(std::vector<int32_t>(s.suppress_ids.end() - 7, s.suppress_ids.end()),
            (std::vector<int32_t>{50254, 50258, 50358, 50359, 50360, 50361, 50362}));
  EXPECT_EQ(s.suppress_ids_begin, (std::vector<int32_t>{220, 50257}));
  EXPECT_EQ(s.alignment_heads,
            (std::vector<std::pair<int32_t, int32_t>>{{2, 2}, {3, 0}, {3, 2}, {3, 3}, {3, 4}, {3, 5}}));
}

TEST_F(Ct2Writer, WeightsAreSmallDeterministicAndDifferPerSeed) {
  const Ct2Model m = Ct2Model::open((dir_ / "tiny.en" / "model.bin").string());
  auto element = [](const Ct2Variable& v, uint64_t i) {
    uint16_t h;
    std::memcpy(&h, v.bytes.data() + 2 * i, 2);
    return fp16_to_fp32(h);
  };
  auto value = [&](std::string_view name, uint64_t i) { return element(m.get(name), i); };
  // Projections within +-0.02, LayerNorm scales around 1, the K part of fused biases 0.
  const Ct2Variable& w = m.get("decoder/layer_2/self_attention/linear_0/weight");
  float largest = 0;
  for (uint64_t i = 0; i < w.elements(); ++i) largest = std::max(largest, std::fabs(element(w, i)));
  EXPECT_LE(largest, 0.0201f);  // 0.02 and float16 rounding
  EXPECT_GT(largest, 0.015f);
  EXPECT_NEAR(value("encoder/layer_0/ffn/layer_norm/gamma", 5), 1.0f, 0.02f);
  EXPECT_NE(value("decoder/layer_0/self_attention/linear_0/bias", 0), 0.0f);    // Q
  EXPECT_EQ(value("decoder/layer_0/self_attention/linear_0/bias", 384), 0.0f);  // K
  EXPECT_EQ(value("decoder/layer_0/self_attention/linear_0/bias", 767), 0.0f);
  EXPECT_NE(value("decoder/layer_0/self_attention/linear_0/bias", 768), 0.0f);  // V
  EXPECT_EQ(value("decoder/layer_0/attention/linear_1/bias", 0), 0.0f);         // cross-attention K
  EXPECT_NE(value("decoder/layer_0/attention/linear_1/bias", 384), 0.0f);       // cross-attention V
  // The encoder's positions are Whisper's sinusoids: sin in the first half of the channels, cos in the second.
  EXPECT_NEAR(value("encoder/position_encodings/encodings", 384 * 1 + 0), std::sin(1.0f), 1e-3);
  EXPECT_NEAR(value("encoder/position_encodings/encodings", 384 * 1 + 192), std::cos(1.0f), 1e-3);
  EXPECT_NEAR(value("encoder/position_encodings/encodings", 384 * 1499 + 191), std::sin(1499 / 10000.0f), 1e-3);

  // The same seed gives the same bytes; another seed other weights.
  const auto again = test::temp_dir("ct2-writer-again");
  write_ct2_whisper(whisper_preset("tiny.en"), 42, (again / "a").string());
  write_ct2_whisper(whisper_preset("tiny.en"), 7, (again / "b").string());
  const std::string first = read_text(dir_ / "tiny.en" / "model.bin");
  EXPECT_TRUE(first == read_text(again / "a" / "model.bin"));
  EXPECT_FALSE(first == read_text(again / "b" / "model.bin"));
  std::filesystem::remove_all(again);
}

TEST_F(Ct2Writer, TinyEnConfigAndSpecialTokensAreTheRealOnes) {
  if (const auto why = test::real_whisper_absent(); !why.empty()) GTEST_SKIP() << why;
  const auto real = test::real_whisper_dir();
  EXPECT_EQ(read_text(dir_ / "tiny.en" / "config.json"), read_text(real / "config.json"));
  std::vector<std::string> real_vocabulary, written;
  for (auto [path, lines] : {std::pair{real / "vocabulary.txt", &real_vocabulary},
                             std::pair{dir_ / "tiny.en" / "vocabulary.txt", &written}}) {
    std::istringstream in(read_text(path));
    for (std::string line; std::getline(in, line);) lines->push_back(line);
  }
  ASSERT_EQ(written.size(), real_vocabulary.size());
  for (size_t id = 0; id < 256; ++id) EXPECT_EQ(written[id], real_vocabulary[id]) << id;  // the byte symbols
  for (size_t id = 50256; id < written.size(); ++id) EXPECT_EQ(written[id], real_vocabulary[id]) << id;
  // The real encoder positions are the same sinusoids (up to float16 rounding).
  const Ct2Model real_model = Ct2Model::open((real / "model.bin").string());
  const Ct2Model synthetic = Ct2Model::open((dir_ / "tiny.en" / "model.bin").string());
  const auto& a = real_model.get("encoder/position_encodings/encodings");
  const auto& b = synthetic.get("encoder/position_encodings/encodings");
  ASSERT_EQ(a.bytes.size(), b.bytes.size());
  float worst = 0;
  for (size_t i = 0; i < a.bytes.size(); i += 2) {
    uint16_t x, y;
    std::memcpy(&x, a.bytes.data() + i, 2);
    std::memcpy(&y, b.bytes.data() + i, 2);
    worst = std::max(worst, std::fabs(fp16_to_fp32(x) - fp16_to_fp32(y)));
  }
  EXPECT_LE(worst, 2e-3f);
}

TEST(WhisperPresets, EveryPresetHasTheRealSizesAndVocabulary) {
  struct Expected {
    const char* name;
    uint32_t mels, state, heads, layers, vocab;
  };
  for (const Expected& e : {Expected{"tiny", 80, 384, 6, 4, 51865}, {"tiny.en", 80, 384, 6, 4, 51864},
                            {"base", 80, 512, 8, 6, 51865}, {"base.en", 80, 512, 8, 6, 51864},
                            {"small", 80, 768, 12, 12, 51865}, {"small.en", 80, 768, 12, 12, 51864},
                            {"medium", 80, 1024, 16, 24, 51865}, {"medium.en", 80, 1024, 16, 24, 51864},
                            {"large-v3", 128, 1280, 20, 32, 51866}}) {
    const WhisperPreset& p = whisper_preset(e.name);
    EXPECT_EQ(p.n_mels, e.mels) << e.name;
    EXPECT_EQ(p.n_state, e.state) << e.name;
    EXPECT_EQ(p.n_head, e.heads) << e.name;
    EXPECT_EQ(p.n_layer, e.layers) << e.name;
    EXPECT_EQ(p.n_ffn(), 4 * e.state) << e.name;
    EXPECT_EQ(p.vocabulary.n_vocab(), e.vocab) << e.name;
    const std::vector<std::string> tokens = whisper_vocabulary(p.vocabulary);
    ASSERT_EQ(tokens.size(), e.vocab) << e.name;
    EXPECT_EQ(tokens[p.vocabulary.eot()], "<|endoftext|>") << e.name;
    EXPECT_EQ(tokens[p.vocabulary.first_language()], "<|en|>") << e.name;
    EXPECT_EQ(tokens[p.vocabulary.no_timestamps()], "<|notimestamps|>") << e.name;
    EXPECT_EQ(tokens.back(), "<|30.00|>") << e.name;
    for (const auto& [layer, head] : p.alignment_heads) {
      EXPECT_LT(static_cast<uint32_t>(layer), p.n_layer) << e.name;
      EXPECT_LT(static_cast<uint32_t>(head), p.n_head) << e.name;
    }
  }
  // large-v3 adds <|yue|> after the 99 languages and names the no-speech token <|nospeech|>.
  const std::vector<std::string> v3 = whisper_vocabulary(whisper_preset("large-v3").vocabulary);
  EXPECT_EQ(v3[50357], "<|su|>");
  EXPECT_EQ(v3[50358], "<|yue|>");
  EXPECT_EQ(v3[50359], "<|translate|>");
  EXPECT_EQ(v3[50363], "<|nospeech|>");
  EXPECT_EQ(v3[50364], "<|notimestamps|>");
  EXPECT_EQ(v3[50365], "<|0.00|>");
  EXPECT_EQ(whisper_preset("large-v3").vocabulary.lang_ids().size(), 100u);
  // Ordinary tokens are distinct (a vocabulary maps text back to one id).
  std::set<std::string> distinct(v3.begin(), v3.end());
  EXPECT_EQ(distinct.size(), v3.size());
  EXPECT_EQ(whisper_language_name("yue"), "cantonese");
  EXPECT_EQ(whisper_language_name("en"), "english");
  EXPECT_EQ(whisper_language_name("english"), "");
}

TEST(WhisperPresets, AnUnknownNameIsRefusedInOneLine) {
  for (const char* bad : {"", "tiny.fr", "large", "large-v2", "TINY", "tiny\nbase"}) {
    try {
      whisper_preset(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      EXPECT_NE(message.find("(valid: tiny, tiny.en, base, base.en, small, small.en, medium, medium.en, large-v3)"),
                std::string::npos)
          << message;
    }
  }
}

std::string quoted(const std::filesystem::path& p) {
  std::string q = "'";  // (not "'" + ...: g++ 12 warns falsely about that, -Wrestrict)
  q += p.string();
  q += "'";
  return q;
}

TEST(SynthWhisperCli, WritesAFolderAndRefusesBadInputInOneLine) {
  const auto dir = test::temp_dir("synth-whisper-cli");
  const std::string rayo = quoted(test::rayo_binary());
  auto ok = test::run_command(rayo + " synth --whisper tiny.en --seed 3 -o " + quoted(dir / "m"), false);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("whisper tiny.en"), std::string::npos) << ok.output;
  EXPECT_EQ(load_ct2_whisper((dir / "m").string()).spec.n_vocab, 51864u);

  auto one_line_error = [&](const std::string& args, const std::string& expected) {
    const auto r = test::run_command(rayo + " synth " + args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
  };
  one_line_error("--whisper tiny.fr -o " + quoted(dir / "x"), "unknown Whisper preset \"tiny.fr\" (valid: tiny, ");
  one_line_error("--whisper tiny --type q8_0 -o " + quoted(dir / "x"), "--type is for GGUF models");
  std::ofstream(dir / "file") << "not a folder";
  one_line_error("--whisper tiny -o " + quoted(dir / "file"), "exists and is not a folder");
  EXPECT_FALSE(std::filesystem::exists(dir / "x"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rayo::whisper
