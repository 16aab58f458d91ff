// `rayo serve --whisper` as its clients see it: the real binary and the real
// Whisper tiny.en weights on a free loopback port, OpenAI's audio endpoints
// spoken to with multipart uploads. The transcripts must be rayo transcribe's
// (which the parity tests hold to faster-whisper's), byte for byte in every
// response format.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "server_process.h"
#include "support/paths.h"
#include "support/real_model.h"
#include "tools/sse_client.h"

namespace rayo::test {
namespace {

using nlohmann::json;

std::string clip(const std::string& name) { return shared_path("whisper/audio/" + name + ".wav").string(); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A multipart/form-data body: the fields, then the file (when named).
struct Form {
  std::vector<std::pair<std::string, std::string>> fields;
  std::string file_name, file_bytes;
  static constexpr const char* kBoundary = "rayo-test-boundary-7MA4YWxkTrZu0gW";
  std::string content_type() const { return std::string("multipart/form-data; boundary=") + kBoundary; }
  std::string body() const {
    std::string b;
    for (const auto& [name, value] : fields)
      b += std::string("--") + kBoundary + "\r\nContent-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" + value +
           "\r\n";
    if (!file_name.empty())
      b += std::string("--") + kBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" +
           file_name + "\"\r\nContent-Type: application/octet-stream\r\n\r\n" + file_bytes + "\r\n";
    return b + "--" + kBoundary + "--\r\n";
  }
};

Form upload(const std::string& name, std::vector<std::pair<std::string, std::string>> fields = {}) {
  fields.insert(fields.begin(), {"model", "whisper-1"});
  return Form{std::move(fields), name + ".wav", read_file(clip(name))};
}

tools::HttpResult post(const ServerProcess& s, const std::string& path, const Form& f) {
  return tools::http_post(s.address(), path, f.body(), f.content_type());
}

void expect_error(const tools::HttpResult& r, int status, const std::string& param) {
  EXPECT_EQ(r.status, status) << r.body;
  const json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(!j.is_discarded() && j.contains("error")) << r.body;
  EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
  if (!param.empty()) {
    EXPECT_EQ(j["error"]["param"], param) << r.body;
  }
}

// One server with both models (Whisper greedy, for speed), shared by the suite.
class ServerAudio : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (shared_dir().empty() || !real_whisper_absent().empty()) return;
    server_ = new ServerProcess({"--whisper", real_whisper_dir().string(), "--whisper-beam-size", "1", "-m",
                                 shared_path("models/stories260K.gguf").string(), "-c", "256", "-t", "2",
                                 "--max-body-bytes", "1000000"});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    RAYO_REQUIRE_SHARED();
    if (const std::string why = real_whisper_absent(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(server_ && server_->ok()) << "rayo serve did not start";
  }
  // What rayo transcribe writes for the clip in that format, with the server's settings.
  static std::string cli_transcript(const std::string& name, const std::string& format) {
    const auto r = run_command(rayo_binary().string() + " transcribe -m " + real_whisper_dir().string() +
                                   " --beam-size 1 -t 2 --output-format " + format + " " + clip(name),
                               /*merge_stderr=*/false);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output;
  }
  static ServerProcess* server_;
};
ServerProcess* ServerAudio::server_ = nullptr;

TEST_F(ServerAudio, EveryResponseFormatIsTheCliTranscript) {
  for (const char* format : {"json", "text", "srt", "vtt", "verbose_json"}) {
    const auto r = post(*server_, "/v1/audio/transcriptions", upload("u01_plain", {{"response_format", format}}));
    ASSERT_EQ(r.status, 200) << format << ": " << r.body;
    EXPECT_EQ(r.body, cli_transcript("u01_plain", std::string(format) == "text" ? "txt" : format)) << format;
  }
  // The default format is json, and the text is what was said.
  const auto r = post(*server_, "/v1/audio/transcriptions", upload("u07_punct"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, cli_transcript("u07_punct", "json"));
  EXPECT_NE(json::parse(r.body)["text"].get<std::string>().find("not what I said"), std::string::npos) << r.body;
  // The short paths and translations (an English-only model transcribes English).
  const auto t = post(*server_, "/audio/translations", upload("u07_punct"));
  EXPECT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(t.body, r.body);
}

TEST_F(ServerAudio, ConcurrentRequestsAreAllAnswered) {
  const std::string expected = cli_transcript("u05_names", "json");
  std::vector<tools::HttpResult> results(4);
  std::vector<std::thread> clients;
  for (auto& result : results)
    clients.emplace_back([&] { result = post(*server_, "/v1/audio/transcriptions", upload("u05_names")); });
  // A chat request is answered meanwhile by the language model.
  const auto chat = tools::http_post(server_->address(), "/v1/chat/completions",
                                     R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":4})");
  for (auto& c : clients) c.join();
  EXPECT_EQ(chat.status, 200) << chat.body;
  for (const auto& r : results) {
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body, expected);
  }
}

TEST_F(ServerAudio, ModelsListsBothModels) {
  const auto r = tools::http_get(server_->address(), "/v1/models");
  ASSERT_EQ(r.status, 200);
  const json j = json::parse(r.body);
  ASSERT_EQ(j["data"].size(), 2u) << r.body;
  EXPECT_EQ(j["data"][0]["id"], "stories260K.gguf");
  EXPECT_EQ(j["data"][1]["id"], real_whisper_dir().filename().string());
  EXPECT_EQ(j["data"][1]["meta"]["arch"], "whisper");
}

TEST_F(ServerAudio, BadRequestsGetOpenAIErrors) {
  // Not a form; a form without the file; a file that is not audio; a WAV cut short.
  expect_error(tools::http_post(server_->address(), "/v1/audio/transcriptions", R"({"file":"x"})"), 400, "file");
  expect_error(post(*server_, "/v1/audio/transcriptions", Form{{{"model", "whisper-1"}}, "", ""}), 400, "file");
  expect_error(post(*server_, "/v1/audio/transcriptions", Form{{}, "notes.wav", "these are not samples"}), 400,
               "file");
  Form cut = upload("u01_plain");
  cut.file_bytes.resize(5000);
  expect_error(post(*server_, "/v1/audio/transcriptions", cut), 400, "file");
  expect_error(post(*server_, "/v1/audio/transcriptions", Form{{}, "empty.wav", ""}), 400, "file");
  // Fields out of range.
  expect_error(post(*server_, "/v1/audio/transcriptions", upload("u01_plain", {{"temperature", "2"}})), 400,
               "temperature");
  expect_error(post(*server_, "/v1/audio/transcriptions", upload("u01_plain", {{"language", "xx"}})), 400,
               "language");
  expect_error(post(*server_, "/v1/audio/transcriptions", upload("u01_plain", {{"response_format", "mp3"}})), 400,
               "response_format");
  // An upload over --max-body-bytes (1 000 000).
  expect_error(post(*server_, "/v1/audio/transcriptions", upload("long")), 413, "");
  // The server is still there.
  EXPECT_EQ(post(*server_, "/v1/audio/transcriptions", upload("u11_list")).status, 200);
}

TEST_F(ServerAudio, OfficialPythonPackageTranscribes) {
  const auto probe = run_command("python3 -c 'import openai' 2>&1");
  if (probe.exit_code != 0)
    GTEST_SKIP() << "the openai Python package cannot be imported (install it with scripts/install-deps.sh): "
                 << probe.output;
  const std::string script = std::string(RAYO_SOURCE_DIR) + "/tests/integration/openai_audio_test.py";
  const auto r = run_command("timeout 120 python3 " + script + " " + server_->base_url() + "/v1 " + clip("u01_plain") +
                             " '" + json::parse(cli_transcript("u01_plain", "json"))["text"].get<std::string>() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// A server of the Whisper model alone: the language routes say what is
// missing, and with no room to wait a second transcription is refused at once.
TEST(ServerAudioAlone, LanguageRoutesSayNoModelAndAFullQueueGets503) {
  RAYO_REQUIRE_SHARED();
  if (const std::string why = real_whisper_absent(); !why.empty()) GTEST_SKIP() << why;
  ServerProcess s({"--whisper", real_whisper_dir().string(), "--whisper-beam-size", "1", "-t", "2", "--max-queue", "0"});
  ASSERT_TRUE(s.ok()) << "rayo serve did not start";
  const auto chat = tools::http_post(s.address(), "/v1/chat/completions", R"({"messages":[]})");
  expect_error(chat, 404, "");
  EXPECT_NE(chat.body.find("-m MODEL.gguf"), std::string::npos) << chat.body;

  tools::HttpResult first;
  std::thread busy([&] { first = post(s, "/v1/audio/transcriptions", upload("long")); });
  bool running = false;
  for (int i = 0; i < 500 && !running; ++i) {
    running = tools::http_get(s.address(), "/metrics").body.find("rayo_audio_requests_in_flight 1") !=
              std::string::npos;
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(running) << "the first transcription never showed in /metrics";
  expect_error(post(s, "/v1/audio/transcriptions", upload("u01_plain")), 503, "");
  busy.join();
  EXPECT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerAudioAlone, NothingToServeIsOneLine) {
  const auto r = run_command(rayo_binary().string() + " serve --port 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("nothing to serve"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  const auto bad = run_command(rayo_binary().string() + " serve --port 0 --whisper " + temp_dir("no-whisper").string());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_EQ(std::count(bad.output.begin(), bad.output.end(), '\n'), 1) << bad.output;
}

}  // namespace
}  // namespace rayo::test
