// CTranslate2 int8 Whisper folders (whisper/ct2_int8.h), on the real tiny.en
// quantized as CTranslate2 quantizes it (support/ct2_int8_folder.h; its bytes
// checked against CTranslate2's, tests/data/whisper-int8/): rayo runs the int8
// values as Q8_0 blocks and reads the clips as faster-whisper reads that folder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "audio/audio_stream.h"
#include "audio/log_mel.h"
#include "quant/dequantize.h"
#include "support/ct2_int8_folder.h"
#include "support/paths.h"
#include "support/real_model.h"
#include "whisper/ct2_int8.h"
#include "whisper/ggml_whisper.h"
#include "whisper/graph_runner.h"
#include "whisper/transcribe.h"
#include "whisper/weight_store.h"
#include "whisper/whisper_loader.h"
#include "whisper/whisper_spec.h"
#include "whisper/whisper_tokenizer.h"

namespace rayo::whisper {
namespace {

namespace fs = std::filesystem;

fs::path data_dir() { return fs::path(RAYO_SOURCE_DIR) / "tests/data/whisper-int8"; }

// Words of a text, lower case, bare of punctuation.
std::vector<std::string> spoken_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) {
    std::string bare;
    for (char c : w)
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '\'' || c == '-') bare += static_cast<char>(std::tolower(c));
    if (!bare.empty()) out.push_back(bare);
  }
  return out;
}

// Words to insert, delete or replace to turn a into b.
size_t word_distance(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

class WhisperInt8Folder : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::real_whisper_absent().empty()) return;
    folder_ = new fs::path(test::temp_dir("ct2-int8") / "whisper-tiny.en-int8");
    test::write_ct2_int8_folder(test::real_whisper_dir(), *folder_);
  }
  static void TearDownTestSuite() {
    delete folder_;
    folder_ = nullptr;
  }
  void SetUp() override {
    if (const std::string why = test::real_whisper_absent(); !why.empty()) GTEST_SKIP() << why;
  }
  static fs::path* folder_;
};
fs::path* WhisperInt8Folder::folder_ = nullptr;

// The folder the tests run on holds what CTranslate2 4.8.5 writes: every int8
// matrix and scale with its bytes' hash.
TEST_F(WhisperInt8Folder, HoldsTheBytesCTranslate2Writes) {
  const Ct2Model model = Ct2Model::open((*folder_ / "model.bin").string());
  std::ifstream listing(data_dir() / "ct2-int8-variables.txt");
  ASSERT_TRUE(listing) << (data_dir() / "ct2-int8-variables.txt");
  int checked = 0;
  for (std::string line; std::getline(listing, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string name, dtype, shape, hash;
    s >> name >> dtype >> shape >> hash;
    const Ct2Variable* v = model.find(name);
    ASSERT_NE(v, nullptr) << name;
    EXPECT_EQ(ct2_type_name(v->type), dtype) << name;
    std::string ours;
    for (uint32_t d : v->shape) ours += (ours.empty() ? "" : "x") + std::to_string(d);
    EXPECT_EQ(ours, shape) << name;
    char text[17];
    std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(test::fnv1a64(v->bytes)));
    EXPECT_EQ(text, hash) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 2 * (1 + 2 + 4 * 4 + 4 * 7));  // embedding, convolutions, encoder and decoder blocks' matrices
}

// Loaded, each int8 matrix is Q8_0 whose values are q / scale but for the f16
// rounding of 1 / scale; the first convolution (3 x 80 values a row, not whole
// blocks) is f32, exactly q / scale.
TEST_F(WhisperInt8Folder, RunsItsInt8ValuesAsQ8_0) {
  const WhisperFiles files = load_ct2_whisper(folder_->string());
  const WeightStore weights(files.model, WeightFormat::AsStored);
  const Ct2Variable& fc1 = files.model.get("decoder/layer_2/ffn/linear_0/weight");
  ASSERT_EQ(weights.type(fc1), TensorType::Q8_0);
  const Ct2Variable* scale = ct2_int8_scale(files.model, fc1);
  ASSERT_NE(scale, nullptr);
  const int64_t rows = fc1.shape[0], cols = fc1.shape[1];
  std::vector<float> exact(rows * cols), run(rows * cols);
  ct2_int8_to_f32(fc1, *scale, 0, rows, exact.data());
  quant::dequantize_row(TensorType::Q8_0, weights.data(fc1), run.data(), rows * cols);
  double worst = 0;
  for (size_t i = 0; i < exact.size(); ++i)
    if (exact[i] != 0) worst = std::max(worst, std::abs(double{run[i]} / exact[i] - 1));
  EXPECT_LT(worst, 1.0 / 2048);  // f16's rounding of the row's step
  EXPECT_EQ(weights.type(files.model.get("encoder/conv1/weight")), TensorType::F32);
  EXPECT_EQ(weights.type(files.model.get("encoder/conv2/weight")), TensorType::Q8_0);
  EXPECT_EQ(weights.type(files.model.get("decoder/projection/weight")), TensorType::Q8_0);  // the embedding's alias
  EXPECT_EQ(weights.type(files.model.get("encoder/layer_0/self_attention/linear_0/bias")), TensorType::F16);

  // rayo convert: a whisper.cpp f32 file holds q / scale exactly.
  const std::string file = (test::temp_dir("ct2-int8-ggml") / "ggml-f32.bin").string();
  write_ggml_whisper(files, file, TensorType::F32);
  const WhisperFiles ggml = load_whisper(file);
  const Ct2Variable& converted = ggml.model.get("decoder/layer_2/ffn/linear_0/weight");
  ASSERT_EQ(converted.type, Ct2Type::F32);
  std::vector<float> read(exact.size());
  std::memcpy(read.data(), converted.bytes.data(), 4 * read.size());
  EXPECT_EQ(read, exact);
}

// The same int8 weights, but activations quantized differently: CTranslate2
// gives a token's whole row one int8 scale, rayo's Q8_0 products one per 32
// values. Three short clips and the silence read exactly as faster-whisper
// reads the folder; the others rest on near-ties that the rounding tips
// (measured: u01_plain "sober mule, he knocked" for "sober mule, dog", 2 words;
// long.wav "a split" for "lastly" and "how" for "now", 3 of 93 words; with the
// int8 values run exactly in f32, u01_plain reads "over the lazy dog", a third
// reading).
TEST_F(WhisperInt8Folder, ReadsTheClipsAsFasterWhisperReadsThatFolder) {
  RAYO_REQUIRE_SHARED();
  std::ifstream in(data_dir() / "faster-whisper.json");
  const nlohmann::json ref = nlohmann::json::parse(in);
  const WhisperFiles files = load_ct2_whisper(folder_->string());
  const WhisperTokenizer tokenizer = WhisperTokenizer::from_files(files);
  GraphWhisperRunner runner(files, GraphRunnerOptions{{"cpu", 2}, 1, WeightFormat::AsStored});
  TranscribeOptions o;
  o.language = "en";
  o.beam_size = 1;
  o.temperatures = {0.0};
  o.condition_on_previous_text = false;
  o.without_timestamps = true;
  for (const auto& [clip, text] : ref["texts"].items()) {
    const auto samples = audio::load_audio(test::shared_path("whisper/audio/" + clip + ".wav").string());
    const std::string got = transcribe(runner, tokenizer, audio::LogMelSpectrogram(80).compute(samples), o).text();
    const size_t distance = word_distance(spoken_words(got), spoken_words(text.get<std::string>()));
    if (clip == "u01_plain" || clip == "long")
      EXPECT_LE(distance, clip == "long" ? 3u : 2u) << clip << ": " << got;
    else
      EXPECT_EQ(got, text.get<std::string>()) << clip;
  }
}

}  // namespace
}  // namespace rayo::whisper
