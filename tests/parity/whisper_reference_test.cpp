// rayo's Whisper against faster-whisper 1.2.1 on the real tiny.en
// (shared/whisper/reference/faster-whisper-*.json, made with language "en",
// temperature 0 alone, no conditioning on previous text): every shared clip's
// text, greedy and beam 5 without timestamps, and greedy with timestamps
// segment by segment (tokens, times, statistics), on rayo's CPU backend.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "audio/audio_stream.h"
#include "audio/log_mel.h"
#include "audio/mel_source.h"
#include "support/paths.h"
#include "support/real_model.h"
#include "whisper/ggml_whisper.h"
#include "whisper/graph_runner.h"
#include "whisper/transcribe.h"
#include "whisper/whisper_loader.h"
#include "whisper/whisper_tokenizer.h"

namespace rayo::whisper {
namespace {

nlohmann::json reference(const std::string& name) {
  std::ifstream in(test::shared_path("whisper/reference/" + name));
  return nlohmann::json::parse(in);
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The words of a text, lower case, without the punctuation around them.
std::vector<std::string> spoken_words(const std::string& text) {
  std::vector<std::string> out;
  for (std::string w : words(text)) {
    std::string bare;
    for (char c : w)
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '\'' || c == '-') bare += static_cast<char>(std::tolower(c));
    if (!bare.empty()) out.push_back(bare);
  }
  return out;
}

struct Model {
  WhisperFiles files;
  WhisperTokenizer tokenizer;
  explicit Model(WhisperFiles f) : files(std::move(f)), tokenizer(WhisperTokenizer::from_files(files)) {}
};

class WhisperReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::real_whisper_absent().empty() || test::shared_dir().empty()) return;
    const std::string folder = test::real_whisper_dir().string();
    model_ = new Model(load_ct2_whisper(folder));
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override {
    if (const std::string why = test::real_whisper_absent(); !why.empty()) GTEST_SKIP() << why;
    RAYO_REQUIRE_SHARED();
  }

  // The reference's settings: language en, temperature 0 only, no previous text.
  static TranscribeOptions options(int beam_size, bool timestamps) {
    TranscribeOptions o;
    o.language = "en";
    o.beam_size = beam_size;
    o.temperatures = {0.0};
    o.condition_on_previous_text = false;
    o.without_timestamps = !timestamps;
    return o;
  }

  static Transcript transcribe_clip(GraphWhisperRunner& runner, const std::string& clip, const TranscribeOptions& o) {
    const auto samples = audio::load_audio(test::shared_path("whisper/audio/" + clip + ".wav").string());
    const audio::LogMel mel = audio::LogMelSpectrogram(80).compute(samples);
    return transcribe(runner, model_->tokenizer, mel, o);
  }

  static void expect_texts(const std::string& file, WeightFormat weights, int beam_size) {
    const auto ref = reference(file);
    GraphWhisperRunner runner(model_->files, GraphRunnerOptions{{"cpu", 2}, beam_size, weights});
    for (const auto& [clip, text] : ref["texts"].items())
      EXPECT_EQ(transcribe_clip(runner, clip, options(beam_size, false)).text(), text.get<std::string>()) << clip;
  }

  static Model* model_;
};
Model* WhisperReference::model_ = nullptr;

TEST_F(WhisperReference, GreedyTextsEqualFasterWhisperFloat32) {
  expect_texts("faster-whisper-greedy-f32.json", WeightFormat::AsStored, 1);
}

TEST_F(WhisperReference, BeamFiveTextsEqualFasterWhisperFloat32) {
  expect_texts("faster-whisper-beam5-f32.json", WeightFormat::AsStored, 5);
}

// Timestamps on: faster-whisper seeks by them, so the segments' times and the
// windows (seek) must agree too, not only the text.
TEST_F(WhisperReference, TimestampedSegmentsEqualFasterWhisperFloat32) {
  const auto ref = reference("faster-whisper-greedy-f32-timestamps.json");
  GraphWhisperRunner runner(model_->files, GraphRunnerOptions{{"cpu", 2}, 1, WeightFormat::AsStored});
  for (const auto& [clip, segments] : ref["segments"].items()) {
    const Transcript t = transcribe_clip(runner, clip, options(1, true));
    EXPECT_EQ(t.text(), ref["texts"][clip].get<std::string>()) << clip;
    ASSERT_EQ(t.segments.size(), segments.size()) << clip;
    for (size_t i = 0; i < segments.size(); ++i) {
      const Segment& s = t.segments[i];
      const auto& r = segments[i];
      EXPECT_EQ(s.tokens, r["tokens"].get<std::vector<int32_t>>()) << clip << " segment " << i;
      EXPECT_NEAR(s.start, r["start"].get<double>(), 1e-6) << clip << " segment " << i;
      EXPECT_NEAR(s.end, r["end"].get<double>(), 1e-6) << clip << " segment " << i;
      EXPECT_EQ(s.seek, r["seek"].get<int64_t>()) << clip << " segment " << i;
      // The statistics the fallback judges by, from logits within ~1e-3 of CTranslate2's.
      EXPECT_NEAR(s.avg_logprob, r["avg_logprob"].get<double>(), 2e-3) << clip << " segment " << i;
      EXPECT_NEAR(s.no_speech_prob, r["no_speech_prob"].get<double>(), 2e-3) << clip << " segment " << i;
      EXPECT_NEAR(s.compression_ratio, r["compression_ratio"].get<double>(), 1e-9) << clip << " segment " << i;
    }
  }
}

// A recording streamed in two passes (audio/mel_source.h: how rayo reads an
// hour of audio in bounded memory) gives the timestamped transcript of the
// clip in memory, segment for segment, with the default fallback and prompts.
TEST_F(WhisperReference, StreamedRecordingGivesTheTranscriptOfTheClipInMemory) {
  const std::string path = test::shared_path("whisper/audio/long.wav").string();
  GraphWhisperRunner runner(model_->files, GraphRunnerOptions{{"cpu", 2}, 5, WeightFormat::AsStored});
  TranscribeOptions o;
  o.beam_size = 1;
  const Transcript whole = transcribe_clip(runner, "long", o);
  auto open = [&] { return std::make_unique<audio::AudioStream>(path); };
  audio::StreamingMel streamed(open(), open, 80);
  const Transcript t = transcribe(runner, model_->tokenizer, streamed, o);
  EXPECT_EQ(t.duration, whole.duration);
  ASSERT_EQ(t.segments.size(), whole.segments.size());
  ASSERT_GT(t.segments.size(), 3u);
  for (size_t i = 0; i < t.segments.size(); ++i) {
    EXPECT_EQ(t.segments[i].tokens, whole.segments[i].tokens) << i;
    EXPECT_EQ(t.segments[i].start, whole.segments[i].start) << i;
    EXPECT_EQ(t.segments[i].seek, whole.segments[i].seek) << i;
    EXPECT_EQ(t.segments[i].avg_logprob, whole.segments[i].avg_logprob) << i;
  }
}

// Weights quantized at load differ from CTranslate2's int8 (per-row scales,
// int8 activations) in rounding, not in kind: the short clips say the same
// words, and long.wav differs by at most one ("Long recording" where
// CTranslate2 int8 reads "Longer", as float32 does). Punctuation is not
// compared: a comma can rest on a near-tie that the rounding of each
// instruction set's kernels tips either way (u11_list's "red, butter" reads
// "red butter" with the AVX-512 kernels, "red, butter" with the AVX2 ones).
TEST_F(WhisperReference, Int8GreedyTextsMatchFasterWhisperInt8) {
  const auto ref = reference("faster-whisper-greedy-int8.json");
  GraphWhisperRunner runner(model_->files, GraphRunnerOptions{{"cpu", 2}, 1, WeightFormat::Int8});
  for (const auto& [clip, text] : ref["texts"].items()) {
    const std::string got = transcribe_clip(runner, clip, options(1, false)).text();
    const auto a = spoken_words(got), b = spoken_words(text.get<std::string>());
    ASSERT_EQ(a.size(), b.size()) << clip << ": " << got;
    int differing = 0;
    for (size_t i = 0; i < a.size(); ++i) differing += a[i] != b[i];
    EXPECT_LE(differing, clip == "long" ? 1 : 0) << clip << ": " << got;
  }
}

// A whisper.cpp file quantized to q8_0 (as its `quantize` writes one) runs as
// stored: its matrices stay Q8_0 blocks, so the model holds about the file's
// bytes rather than four a weight, and its products take int8 activations, as
// faster-whisper's int8 does. Its greedy texts say faster-whisper int8's words
// on every clip (measured: the short clips word for word, punctuation too;
// long.wav within the one word that rayo's int8 at load may differ by).
TEST_F(WhisperReference, QuantizedWhisperCppFileRunsAsStoredAndReadsAsFasterWhisperInt8) {
  const auto ref = reference("faster-whisper-greedy-int8.json");
  const std::filesystem::path dir = test::temp_dir("ggml-q8");
  const std::string file = (dir / "ggml-tiny.en-q8_0.bin").string();
  const uint64_t size = write_ggml_whisper(model_->files, file, TensorType::Q8_0);
  const WhisperFiles q8 = load_whisper(file);
  std::filesystem::remove_all(dir);

  const Ct2Variable& fc1 = q8.model.get("decoder/layer_0/ffn/linear_0/weight");
  EXPECT_EQ(fc1.type, Ct2Type::Blocks);
  EXPECT_EQ(fc1.blocks, TensorType::Q8_0);
  EXPECT_EQ(q8.model.get("encoder/conv2/weight").type, Ct2Type::F16);  // 3-D: f16 in the file
  uint64_t held = 0;
  for (const Ct2Variable& v : q8.model.variables()) held += v.bytes.size();
  EXPECT_LT(held, size);  // the file's weights once, not dequantized (f32 would be 2.6 times the file)

  GraphWhisperRunner runner(q8, GraphRunnerOptions{{"cpu", 2}, 1, WeightFormat::AsStored});
  for (const auto& [clip, text] : ref["texts"].items()) {
    const std::string got = transcribe_clip(runner, clip, options(1, false)).text();  // the same vocabulary
    const auto a = spoken_words(got), b = spoken_words(text.get<std::string>());
    ASSERT_EQ(a.size(), b.size()) << clip << ": " << got;
    int differing = 0;
    for (size_t i = 0; i < a.size(); ++i) differing += a[i] != b[i];
    EXPECT_LE(differing, clip == "long" ? 1 : 0) << clip << ": " << got;
  }
}

}  // namespace
}  // namespace rayo::whisper
