// The public Whisper API (include/rayo/whisper.h) as a user of librayo sees
// it: include/ only, like public_api_test.cpp. Its transcripts are rayo
// transcribe's, which the parity tests hold to faster-whisper's.
#include "rayo/whisper.h"

#if __has_include("whisper/transcriber.h") || __has_include("common/error.h")
#error "src/ is on the include path: the public API test must see include/ only"
#endif

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "support/paths.h"
#include "support/real_model.h"

namespace {

std::string clip(const std::string& name) { return rayo::test::shared_path("whisper/audio/" + name + ".wav").string(); }

// A 16-bit mono PCM WAV's samples over 32768 (the shared clips are 16 kHz).
std::vector<float> wav_samples(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> samples;
  for (size_t i = 44; i + 1 < bytes.size(); i += 2) {
    const auto lo = static_cast<uint8_t>(bytes[i]), hi = static_cast<uint8_t>(bytes[i + 1]);
    samples.push_back(static_cast<float>(static_cast<int16_t>(lo | hi << 8)) / 32768.0f);
  }
  return samples;
}

class PublicWhisper : public ::testing::Test {
 protected:
  void SetUp() override {
    RAYO_REQUIRE_SHARED();
    if (const std::string why = rayo::test::real_whisper_absent(); !why.empty()) GTEST_SKIP() << why;
  }
  static std::string model() { return rayo::test::real_whisper_dir().string(); }
};

TEST_F(PublicWhisper, FileAndSamplesGiveRayoTranscribesText) {
  rayo::Whisper w(model(), {.n_threads = 2});
  EXPECT_FALSE(w.multilingual());
  EXPECT_EQ(w.n_mels(), 80);
  EXPECT_EQ(w.languages(), std::vector<std::string>{"en"});
  const rayo::TranscribeOptions greedy{.beam_size = 1};
  const rayo::Transcription t = w.transcribe_file(clip("u07_punct"), greedy);
  const auto cli = rayo::test::run_command(rayo::test::rayo_binary().string() + " transcribe -t 2 --beam-size 1 -m " +
                                               model() + " " + clip("u07_punct"),
                                           /*merge_stderr=*/false);
  ASSERT_EQ(cli.exit_code, 0) << cli.output;
  EXPECT_EQ(t.text() + "\n", cli.output);
  EXPECT_EQ(t.language, "en");
  EXPECT_GT(t.duration, 3.0);
  ASSERT_FALSE(t.segments.empty());
  EXPECT_LE(t.segments.back().end, t.duration + 0.01);
  // The same audio as samples.
  const rayo::Transcription s = w.transcribe(wav_samples(clip("u07_punct")), greedy);
  EXPECT_EQ(s.text(), t.text());
  EXPECT_EQ(s.segments.size(), t.segments.size());
}

TEST_F(PublicWhisper, ProgressSeesEveryWindowAndCanStopTheCall) {
  rayo::Whisper w(model(), {.n_threads = 2});
  std::vector<double> done;
  const auto t = w.transcribe_file(clip("long"), {.beam_size = 1},
                                   [&](double d, double total) {
                                     EXPECT_NEAR(total, 65.14, 0.1);
                                     done.push_back(d);
                                   });
  ASSERT_GE(done.size(), 3u);  // 65 s: at least three windows
  EXPECT_NEAR(done.back(), t.duration, 0.01);
  // An exception from the callback leaves the call; the model stays usable.
  EXPECT_THROW(w.transcribe_file(clip("long"), {.beam_size = 1}, [](double, double) { throw std::runtime_error("stop"); }),
               std::runtime_error);
  EXPECT_FALSE(w.transcribe_file(clip("u01_plain"), {.beam_size = 1}).text().empty());
}

TEST_F(PublicWhisper, FailuresThrowOneLine) {
  auto one_line = [](const auto& call) {
    try {
      call();
    } catch (const rayo::Error& e) {
      const std::string what = e.what();
      EXPECT_FALSE(what.empty());
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      return;
    }
    ADD_FAILURE() << "no rayo::Error";
  };
  one_line([] { rayo::Whisper("/nonexistent-folder"); });
  one_line([] { rayo::Whisper(model(), {.compute_type = "int4"}); });
  one_line([] { rayo::Whisper(model(), {.device = "tpu"}); });
  rayo::Whisper w(model(), {.n_threads = 2, .max_beams = 2});
  one_line([&] { w.transcribe_file("/nonexistent.wav"); });
  one_line([&] { w.transcribe_file(rayo::test::shared_path("models/stories260K.gguf").string()); });
  one_line([&] { w.transcribe(std::vector<float>{}); });
  one_line([&] { w.transcribe_file(clip("u01_plain"), {.language = "xx"}); });
  one_line([&] { w.transcribe_file(clip("u01_plain"), {.task = "summarize"}); });
  one_line([&] { w.transcribe_file(clip("u01_plain"), {.beam_size = 5}); });  // more beams than loaded for
  one_line([&] { w.transcribe_file(clip("u01_plain"), {.temperature = {}}); });
}

}  // namespace
