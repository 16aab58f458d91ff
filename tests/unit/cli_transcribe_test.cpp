// rayo transcribe as a user meets it: a transcript on standard output, the
// output formats, standard input, and one line and a non-zero exit for bad
// input (not audio, a truncated WAV, an empty file, no samples, a folder
// without model.bin, a model.bin cut short, an unknown format or language).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/paths.h"
#include "support/real_model.h"

namespace rayo {
namespace {

std::string rayo() { return test::rayo_binary().string(); }
std::string clip(const std::string& name) { return test::shared_path("whisper/audio/" + name + ".wav").string(); }

class CliTranscribe : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = test::real_whisper_absent(); !why.empty()) GTEST_SKIP() << why;
    RAYO_REQUIRE_SHARED();
    model_ = test::real_whisper_dir().string();
    dir_ = std::filesystem::temp_directory_path() / ("rayo-transcribe-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string transcribe(const std::string& args) { return rayo() + " transcribe -t 2 -m " + model_ + " " + args; }
  std::filesystem::path write(const std::string& name, const std::string& bytes) {
    const auto p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  static std::string read(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // A one-line error naming the problem, and a failing exit.
  void expect_error(const std::string& command, const std::string& message) {
    const auto r = test::run_command(command);
    EXPECT_NE(r.exit_code, 0) << command << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << command << "\n" << r.output;
    EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
  }

  std::string model_;
  std::filesystem::path dir_;
};

TEST_F(CliTranscribe, PrintsTheTranscriptAlone) {
  const auto r = test::run_command(transcribe(clip("u07_punct")), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // faster-whisper's defaults (beam 5, fallback, previous text) give this reading.
  EXPECT_EQ(r.output, "wait, what, no, no, no, that's not what I said, I said, stop.\n");
}

// Greedy at temperature 0 alone (the reference's settings), the no-speech rule
// drops the window; with beam 5 or the fallback, faster-whisper and rayo both
// hear "You" in it, confidently enough to keep it.
TEST_F(CliTranscribe, ConvertedToWhisperCppGivesTheSameTranscript) {
  const std::string ggml = (dir_ / "ggml-tiny.en.bin").string();
  const auto converted = test::run_command(rayo() + " convert -m " + model_ + " -o " + ggml);
  ASSERT_EQ(converted.exit_code, 0) << converted.output;
  EXPECT_NE(converted.output.find("whisper.cpp ggml, F16, 4+4 layers, width 384"), std::string::npos) << converted.output;
  const auto r = test::run_command(rayo() + " transcribe -t 2 -m " + ggml + " " + clip("u07_punct"), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "wait, what, no, no, no, that's not what I said, I said, stop.\n");
  // Its own output, converted again to q8_0, from the ggml file itself.
  const auto q8 = test::run_command(rayo() + " convert -m " + ggml + " --type q8_0 -o " + (dir_ / "q8.bin").string());
  ASSERT_EQ(q8.exit_code, 0) << q8.output;
  expect_error(rayo() + " convert -m " + model_ + " --type q4_k -o " + (dir_ / "k.bin").string(), "not Q4_K");
  expect_error(rayo() + " convert -m " + model_ + " --type q9 -o " + (dir_ / "k.bin").string(), "unknown --type 'q9'");
  expect_error(rayo() + " convert -m " + ggml + " -o " + ggml, "is the model itself");
  expect_error(rayo() + " transcribe -m " + clip("u07_punct") + " " + clip("u07_punct"), "not a Whisper model");
}

TEST_F(CliTranscribe, SilenceGivesNoText) {
  const auto r = test::run_command(transcribe("--beam-size 1 --temperature 0 " + clip("silence")), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "\n");
}

TEST_F(CliTranscribe, ReadsStandardInputAndWritesSubtitlesAndJson) {
  auto r = test::run_command("cat " + clip("u01_plain") + " | " + transcribe("--output-format srt -"), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("1\n00:00:00,000 --> 00:00:0", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("lazy dog near the river bank."), std::string::npos) << r.output;

  const auto out = dir_ / "t.json";
  r = test::run_command(transcribe("--beam-size 1 --output-format verbose_json -o " + out.string() + " " + clip("long")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(read(out));
  EXPECT_EQ(j["language"], "english");
  EXPECT_NEAR(j["duration"].get<double>(), 65.1, 0.2);
  ASSERT_GE(j["segments"].size(), 6u);
  EXPECT_GT(j["segments"].back()["end"].get<double>(), 60.0);
  EXPECT_NE(j["text"].get<std::string>().find("similar speech."), std::string::npos);
}

TEST_F(CliTranscribe, SeveralFilesGoToADirectory) {
  const auto r = test::run_command(
      transcribe("--beam-size 1 --output-format vtt -o " + dir_.string() + " " + clip("u01_plain") + " " + clip("u11_list")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read(dir_ / "u01_plain.vtt").rfind("WEBVTT\n", 0), 0u);
  EXPECT_NE(read(dir_ / "u11_list.vtt").find("apples"), std::string::npos);
}

TEST_F(CliTranscribe, BadInputGetsOneLine) {
  expect_error(transcribe(write("notes.wav", "these are not samples").string()), "not a readable audio file");
  const std::string wav = read(clip("u01_plain"));
  expect_error(transcribe(write("cut.wav", wav.substr(0, 10000)).string()), "truncated audio");
  expect_error(transcribe(write("empty.wav", "").string()), "empty file");
  expect_error(transcribe(write("header.wav", wav.substr(0, 44)).string()), "no audio samples");
  expect_error(transcribe("--output-format xml " + clip("u01_plain")), "unknown output format");
  expect_error(transcribe("--language xx " + clip("u01_plain")), "unknown language code");
  expect_error(transcribe(clip("no-such-clip")), "no such file");
  expect_error(rayo() + " transcribe -m " + dir_.string() + " " + clip("u01_plain"), "model.bin");

  // A model folder whose model.bin stops in the middle of a variable.
  const auto folder = dir_ / "cut-model";
  std::filesystem::create_directories(folder);
  for (const char* f : {"config.json", "vocabulary.txt"})
    std::filesystem::copy_file(std::filesystem::path(model_) / f, folder / f);
  const std::string bin = read(std::filesystem::path(model_) / "model.bin");
  std::ofstream(folder / "model.bin", std::ios::binary) << bin.substr(0, bin.size() / 2);
  expect_error(rayo() + " transcribe -m " + folder.string() + " " + clip("u01_plain"), "model.bin");
}

}  // namespace
}  // namespace rayo
