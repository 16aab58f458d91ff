// CTranslate2's model.bin (whisper/ct2_model.h): the real Whisper tiny.en
// reads exactly as CTranslate2 lists it (shared/whisper/reference/
// ct2-variables.txt: every variable's name, shape, type, size and offset, the
// scalars' values, the alias), and malformed files are refused in one line.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "support/paths.h"
#include "support/real_model.h"
#include "whisper/ct2_model.h"
#include "whisper/whisper_spec.h"

namespace rayo::whisper {
namespace {

struct Listed {
  std::string name, shape, type;
  uint64_t bytes = 0, offset = 0;
  std::string value;  // "[6]" for scalars
};

std::vector<Listed> listed_variables(std::vector<std::pair<std::string, std::string>>& aliases) {
  std::ifstream in(test::shared_path("whisper/reference/ct2-variables.txt"));
  std::vector<Listed> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    if (line.rfind("alias ", 0) == 0) {
      std::string word, alias, arrow, target;
      s >> word >> alias >> arrow >> target;
      aliases.emplace_back(alias, target);
      continue;
    }
    Listed v;
    s >> v.name;
    // The shape is a bracketed list that may hold spaces: "[51864, 384]".
    std::string part;
    s >> part;
    v.shape = part;
    while (v.shape.back() != ']' && s >> part) v.shape += " " + part;
    s >> v.type >> v.bytes >> v.offset;
    s >> v.value;
    out.push_back(v);
  }
  return out;
}

std::string shape_text(const std::vector<uint32_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

TEST(Ct2Model, TheRealWhisperTinyEnReadsAsCTranslate2ListsIt) {
  RAYO_REQUIRE_SHARED();
  if (const auto why = test::real_whisper_absent(); !why.empty()) GTEST_SKIP() << why;
  const Ct2Model m = Ct2Model::open((test::real_whisper_dir() / "model.bin").string());
  EXPECT_EQ(m.version(), 6u);
  EXPECT_EQ(m.spec_name(), "WhisperSpec");
  EXPECT_EQ(m.spec_revision(), 3u);
  std::vector<std::pair<std::string, std::string>> aliases;
  const auto listed = listed_variables(aliases);
  ASSERT_EQ(listed.size(), 148u);
  ASSERT_EQ(m.variables().size(), listed.size());
  for (size_t i = 0; i < listed.size(); ++i) {
    const Ct2Variable& v = m.variables()[i];
    EXPECT_EQ(v.name, listed[i].name);
    EXPECT_EQ(shape_text(v.shape), listed[i].shape) << v.name;
    EXPECT_EQ(ct2_type_name(v.type), listed[i].type) << v.name;
    EXPECT_EQ(v.bytes.size(), listed[i].bytes) << v.name;
    EXPECT_EQ(v.offset, listed[i].offset) << v.name;
    if (v.shape.empty()) {
      EXPECT_EQ("[" + std::to_string(m.integer(v.name)) + "]", listed[i].value) << v.name;
    }
  }
  EXPECT_EQ(m.aliases(), aliases);
  EXPECT_EQ(m.find("decoder/projection/weight"), m.find("decoder/embeddings/weight"));
  EXPECT_EQ(m.integer("encoder/num_heads"), 6);
  EXPECT_EQ(m.find("decoder/nothing"), nullptr);
  EXPECT_THROW(m.get("decoder/nothing"), Error);
  EXPECT_THROW(m.integer("decoder/layer_norm/beta"), Error);
}

// A small valid image: two variables (a scalar and a [2, 3] float16 matrix) and an alias.
std::vector<uint8_t> small_model(uint32_t version = 6) {
  std::vector<uint8_t> b;
  auto u8 = [&](uint8_t v) { b.push_back(v); };
  auto u16 = [&](uint16_t v) { b.insert(b.end(), {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8)}); };
  auto u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  auto str = [&](const std::string& s) {
    u16(static_cast<uint16_t>(s.size() + 1));
    b.insert(b.end(), s.begin(), s.end());
    u8(0);
  };
  u32(version);
  str("WhisperSpec");
  u32(3);
  u32(2);
  str("encoder/num_heads");
  u8(0), u8(2), u32(2), u16(6);
  str("decoder/embeddings/weight");
  u8(2), u32(2), u32(3), u8(4), u32(12);
  for (int i = 0; i < 6; ++i) u16(0x3C00);  // 1.0 in f16
  u32(1);
  str("decoder/projection/weight");
  str("decoder/embeddings/weight");
  return b;
}

std::string error_of(std::vector<uint8_t> bytes) {
  try {
    (void)Ct2Model::from_bytes(std::move(bytes), "m.bin");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Ct2Model, RefusesMalformedFilesInOneLine) {
  const auto good = small_model();
  const Ct2Model m = Ct2Model::from_bytes(good, "m.bin");
  EXPECT_EQ(m.integer("encoder/num_heads"), 6);
  EXPECT_EQ(m.get("decoder/projection/weight").elements(), 6u);
  // Every truncation is refused, naming where.
  for (size_t n = 0; n < good.size(); ++n) {
    const std::string e = error_of(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<long>(n)));
    EXPECT_NE(e.find("m.bin: truncated: "), std::string::npos) << n << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  EXPECT_EQ(error_of(small_model(5)), "m.bin: CTranslate2 model version 5 is not supported (version 6 is) (at offset 0)");
  auto extra = good;
  extra.push_back(0);
  EXPECT_EQ(error_of(extra), "m.bin: 1 bytes follow the model's end (at offset " + std::to_string(good.size()) + ")");
  auto wrong_size = good;  // the matrix's byte count (after its type byte) says 10, not 12
  const std::string name = "decoder/embeddings/weight";
  const size_t at = std::search(wrong_size.begin(), wrong_size.end(), name.begin(), name.end()) - wrong_size.begin();
  const size_t count_at = at + name.size() + 1 + 1 + 8 + 1;
  ASSERT_EQ(wrong_size[count_at], 12);
  wrong_size[count_at] = 10;
  EXPECT_NE(error_of(wrong_size).find("variable 'decoder/embeddings/weight' holds 10 bytes, but its shape and type need 12"),
            std::string::npos);
  auto bad_type = good;
  bad_type[count_at - 1] = 9;
  EXPECT_NE(error_of(bad_type).find("has unknown type 9"), std::string::npos);
  auto bad_alias = good;  // the alias target renamed: "decoder/embeddings/weigh!"
  bad_alias[bad_alias.size() - 2] = '!';
  EXPECT_NE(error_of(bad_alias).find("alias 'decoder/projection/weight' names no variable"), std::string::npos);
  EXPECT_NE(error_of({}).find("m.bin: truncated: the version needs 4 bytes, 0 left (at offset 0)"), std::string::npos);
}

// The sizes and special tokens of tiny.en as faster-whisper reads them
// (shared/whisper/reference/model-config.json).
TEST(WhisperSpec, TinyEnSizesAndSpecialTokens) {
  if (const auto why = test::real_whisper_absent(); !why.empty()) GTEST_SKIP() << why;
  const WhisperFiles f = load_ct2_whisper(test::real_whisper_dir().string());
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
  EXPECT_EQ(s.eot, 50256);
  EXPECT_EQ(s.sot, 50257);
  EXPECT_EQ(s.translate, 50357);
  EXPECT_EQ(s.transcribe, 50358);
  EXPECT_EQ(s.sot_lm, 50359);
  EXPECT_EQ(s.sot_prev, 50360);
  EXPECT_EQ(s.no_speech, 50361);
  EXPECT_EQ(s.no_timestamps, 50362);
  EXPECT_EQ(s.timestamp_begin, 50363);
  EXPECT_EQ(f.vocabulary.at(51863), "<|30.00|>");
  EXPECT_EQ(f.vocabulary.at(220), "\xc4\xa0");  // U+0120, byte-level BPE's space
  EXPECT_EQ(s.suppress_ids.size(), 90u);
  EXPECT_EQ(s.suppress_ids_begin, (std::vector<int32_t>{220, 50256}));
  EXPECT_EQ(s.alignment_heads.size(), 8u);
  EXPECT_EQ(s.alignment_heads.front(), (std::pair<int32_t, int32_t>{1, 0}));
  EXPECT_EQ(s.lang_ids.size(), 98u);
}

// CTranslate2 4's converters write vocabulary.json (a JSON list) where older
// ones wrote vocabulary.txt: Systran's faster-whisper-large-v3 has the former.
// Either reads as the same vocabulary; a broken one is refused in one line.
TEST(WhisperSpec, VocabularyJsonReadsAsVocabularyTxt) {
  if (const auto why = test::real_whisper_absent(); !why.empty()) GTEST_SKIP() << why;
  const std::filesystem::path real = test::real_whisper_dir();
  const WhisperFiles from_txt = load_ct2_whisper(real.string());
  const auto dir = test::temp_dir("vocabulary-json");
  for (const char* f : {"model.bin", "config.json", "tokenizer.json"})
    std::filesystem::create_symlink(real / f, dir / f);
  auto write_vocabulary = [&](const std::string& text) { std::ofstream(dir / "vocabulary.json", std::ios::binary) << text; };
  write_vocabulary(nlohmann::json(from_txt.vocabulary).dump(2));  // as CTranslate2's json.dump(tokens, indent=2)
  const WhisperFiles from_json = load_ct2_whisper(dir.string());
  EXPECT_EQ(from_json.vocabulary, from_txt.vocabulary);
  EXPECT_EQ(from_json.spec.eot, from_txt.spec.eot);
  EXPECT_EQ(from_json.spec.timestamp_begin, from_txt.spec.timestamp_begin);
  EXPECT_EQ(from_json.merges, from_txt.merges);

  auto error_of = [&] {
    try {
      (void)load_ct2_whisper(dir.string());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  write_vocabulary("[\"a\", 3]");
  EXPECT_NE(error_of().find("token 1 is not a string"), std::string::npos) << error_of();
  write_vocabulary("{\"a\": 1}");
  EXPECT_NE(error_of().find("not a list of tokens"), std::string::npos) << error_of();
  write_vocabulary("[\"a\", ");
  EXPECT_NE(error_of().find("vocabulary.json: not valid JSON"), std::string::npos) << error_of();
  EXPECT_EQ(error_of().find('\n'), std::string::npos) << error_of();
  std::filesystem::remove(dir / "vocabulary.json");
  EXPECT_NE(error_of().find("no vocabulary.json or vocabulary.txt"), std::string::npos) << error_of();
  std::filesystem::remove_all(dir);
}

TEST(WhisperSpec, RefusesWhatIsNotAWhisperFolder) {
  auto error_of = [](const std::string& folder) {
    try {
      (void)load_ct2_whisper(folder);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const auto dir = test::temp_dir("not-whisper");
  EXPECT_NE(error_of((dir / "missing").string()).find("not a folder"), std::string::npos);
  EXPECT_NE(error_of(dir.string()).find("model.bin"), std::string::npos);
  {
    std::ofstream(dir / "model.bin", std::ios::binary).write("\x06\0\0\0", 4);
  }
  EXPECT_NE(error_of(dir.string()).find("truncated"), std::string::npos);
  // A valid model.bin that is not Whisper's spec.
  const Ct2Model small = Ct2Model::from_bytes(small_model(), "m.bin");
  const std::vector<std::string> vocab(2, "x");
  try {
    (void)whisper_spec(small, "{}", vocab, "config.json");
    ADD_FAILURE() << "a model without the encoder's variables was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no variable 'encoder/conv1/weight'"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rayo::whisper
