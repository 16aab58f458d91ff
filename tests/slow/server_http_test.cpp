// `rayo serve` as its clients see it: the real binary on a free loopback port,
// spoken to over HTTP. Bounded request counts; every server is stopped.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <chrono>
#include <thread>

#include "tools/sse_client.h"
#include "server_process.h"
#include "support/paths.h"
#include "support/reference.h"

namespace rayo::test {
namespace {

using nlohmann::json;
using tools::http_get;
using tools::http_post;
using tools::post_stream;

std::string stories() { return shared_path("models/stories260K.gguf").string(); }

// One server shared by the tests of this suite (loading is quick, but starting
// one per test adds up).
class ServerHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (shared_dir().empty()) return;
    server_ = new ServerProcess({"-m", stories(), "-c", "256", "-t", "1", "--parallel", "16", "--prefill-chunk", "32",
                                 "--max-body-bytes", "65536", "--alias", "stories"});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    RAYO_REQUIRE_SHARED();
    ASSERT_TRUE(server_ && server_->ok()) << "rayo serve did not start";
  }
  static tools::ServerAddress addr() { return server_->address(); }
  static ServerProcess* server_;
};
ServerProcess* ServerHttp::server_ = nullptr;

json parse(const std::string& s) { return json::parse(s); }

void expect_openai_error(const tools::HttpResult& r, int status, const std::string& param = "") {
  EXPECT_EQ(r.status, status) << r.body;
  json j = json::parse(r.body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "error body is not JSON: " << r.body;
  ASSERT_TRUE(j.contains("error")) << r.body;
  const json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r.body;
  EXPECT_TRUE(e["type"].is_string()) << r.body;
  EXPECT_TRUE(e.contains("param") && e.contains("code")) << r.body;
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << r.body;
  }
}

// Value of an unlabelled (or exactly labelled) Prometheus sample.
double metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  return -1;
}

// The server's metrics once it has settled: a client has its [DONE] while the
// scheduler still ends the step that sent it (its phase times, the running
// count), so a snapshot taken right after a request may count a step whose
// phases are not recorded yet. Waits (up to 5 s) for no running sequence and
// every step's phases.
std::string settled_metrics(const tools::ServerAddress& a) {
  std::string text;
  for (int attempt = 0; attempt < 250; ++attempt) {
    text = http_get(a, "/metrics").body;
    if (metric(text, "rayo_running_sequences") == 0 &&
        metric(text, "rayo_step_deliver_seconds_count") == metric(text, "rayo_batch_steps_total"))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return text;
}

std::string streamed_text(const tools::ServerAddress& a, const json& body, std::string* finish = nullptr,
                          bool* done = nullptr, json* usage = nullptr) {
  std::string text;
  bool saw_done = false;
  auto r = post_stream(a, "/v1/completions", body.dump(), [&](const std::string& data) {
    if (data == "[DONE]") {
      saw_done = true;
      return true;
    }
    json c = json::parse(data);
    if (c.contains("usage") && c["usage"].is_object() && usage) *usage = c["usage"];
    if (c["choices"].empty()) return true;
    text += c["choices"][0]["text"].get<std::string>();
    if (finish && c["choices"][0]["finish_reason"].is_string()) *finish = c["choices"][0]["finish_reason"];
    return true;
  });
  EXPECT_EQ(r.status, 200) << r.body << r.error;
  if (done) *done = saw_done;
  return text;
}

TEST_F(ServerHttp, CompletionReproducesLlamaCppGreedyText) {
  const auto ref = load_reference(shared_path("reference/stories260K.json").string());
  const auto& c = ref.cases[0];
  json body = {{"prompt", c.prompt}, {"max_tokens", c.greedy.size()}, {"temperature", 0}};
  auto r = http_post(addr(), "/v1/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json j = parse(r.body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "stories");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_TRUE(j["created"].is_number_integer());
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["text"], c.greedy_text);
  EXPECT_EQ(j["usage"]["prompt_tokens"], c.tokens.size());
  EXPECT_EQ(j["usage"]["completion_tokens"], c.greedy.size());
  EXPECT_EQ(j["usage"]["total_tokens"], c.tokens.size() + c.greedy.size());
  EXPECT_EQ(j["choices"][0]["finish_reason"], c.greedy.size() == 48 ? "length" : "stop");

  // The same prompt given as token ids.
  body["prompt"] = c.tokens;
  auto r2 = http_post(addr(), "/v1/completions", body.dump());
  ASSERT_EQ(r2.status, 200) << r2.body;
  EXPECT_EQ(parse(r2.body)["choices"][0]["text"], c.greedy_text);
}

TEST_F(ServerHttp, ChatCompletionHasOpenAIsShape) {
  json body = {{"model", "anything"},
               {"messages", {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}}},
               {"max_tokens", 8},
               {"temperature", 0},
               {"some_unknown_field", {1, 2, 3}}};
  auto r = http_post(addr(), "/v1/chat/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json j = parse(r.body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  const json& ch = j["choices"][0];
  EXPECT_EQ(ch["index"], 0);
  EXPECT_EQ(ch["message"]["role"], "assistant");
  EXPECT_TRUE(ch["message"]["content"].is_string());
  EXPECT_TRUE(ch["finish_reason"] == "stop" || ch["finish_reason"] == "length");
  EXPECT_LE(j["usage"]["completion_tokens"].get<int>(), 8);
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 2);
  if (ch["finish_reason"] == "length") {
    EXPECT_EQ(j["usage"]["completion_tokens"], 8);
  }
}

// A long system prompt shared by requests is evaluated once: later requests
// report its whole blocks as cached tokens and give the same answers.
TEST_F(ServerHttp, SharedPromptPrefixesComeFromTheCache) {
  const std::string system =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
      "friends. One day, she saw a big red ball under a tree and ran to get it.";
  auto ask = [&](const std::string& user) {
    json body = {{"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", user}}}},
                 {"max_tokens", 8},
                 {"temperature", 0}};
    auto r = http_post(addr(), "/v1/chat/completions", body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return parse(r.body);
  };
  const std::string before = http_get(addr(), "/metrics").body;
  const json first = ask("Tell me more.");
  const json again = ask("Tell me more.");
  const json other = ask("What happened next?");
  const int64_t prompt = again["usage"]["prompt_tokens"].get<int64_t>();
  ASSERT_GT(prompt, 32) << "the system prompt should fill whole cache blocks";
  const int64_t cached_again = again["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
  const int64_t cached_other = other["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
  EXPECT_EQ(cached_again % 16, 0);  // whole blocks of 16 positions
  EXPECT_GE(cached_again, 16);
  EXPECT_LT(cached_again, prompt);  // the last prompt token is always evaluated
  EXPECT_GE(cached_other, 16);      // the system prompt's blocks
  EXPECT_LE(cached_other, cached_again);
  EXPECT_EQ(again["choices"][0]["message"]["content"], first["choices"][0]["message"]["content"]);
  const std::string after = http_get(addr(), "/metrics").body;
  const int64_t cached_first = first["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
  EXPECT_EQ(metric(after, "rayo_prompt_tokens_cached_total") - metric(before, "rayo_prompt_tokens_cached_total"),
            cached_first + cached_again + cached_other);
}

TEST_F(ServerHttp, ChatStreamMatchesTheWholeAnswer) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Tell me a story"}}}},
               {"max_tokens", 20},
               {"temperature", 0},
               {"logprobs", true},
               {"top_logprobs", 2}};
  auto whole = http_post(addr(), "/v1/chat/completions", body.dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  json w = parse(whole.body);
  ASSERT_EQ(w["choices"][0]["logprobs"]["content"].size(), w["usage"]["completion_tokens"].get<size_t>());
  for (const auto& t : w["choices"][0]["logprobs"]["content"]) {
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    EXPECT_EQ(t["top_logprobs"].size(), 2u);
    EXPECT_EQ(t["top_logprobs"][0]["token"], t["token"]);  // greedy: the chosen token ranks first
  }

  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  std::string text, finish;
  int chunks = 0, role_chunks = 0, usage_chunks = 0;
  size_t logprob_tokens = 0;
  bool done = false, after_done = false;
  auto r = post_stream(addr(), "/v1/chat/completions", body.dump(), [&](const std::string& data) {
    if (done) after_done = true;
    if (data == "[DONE]") {
      done = true;
      return true;
    }
    json c = json::parse(data);
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_EQ(c["id"], c["id"].get<std::string>());
    ++chunks;
    if (c["choices"].empty()) {
      ++usage_chunks;
      // The same counts; the streamed request found the prompt's whole blocks cached.
      for (const char* k : {"prompt_tokens", "completion_tokens", "total_tokens"})
        EXPECT_EQ(c["usage"][k], w["usage"][k]) << k;
      EXPECT_GE(c["usage"]["prompt_tokens_details"]["cached_tokens"],
                w["usage"]["prompt_tokens_details"]["cached_tokens"]);
      return true;
    }
    EXPECT_TRUE(c.contains("usage") && c["usage"].is_null());
    const json& ch = c["choices"][0];
    if (ch["delta"].contains("role")) ++role_chunks;
    if (ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
    if (ch["logprobs"].is_object()) logprob_tokens += ch["logprobs"]["content"].size();
    if (ch["finish_reason"].is_string()) finish = ch["finish_reason"];
    return true;
  });
  ASSERT_EQ(r.status, 200) << r.body << r.error;
  EXPECT_TRUE(done);
  EXPECT_FALSE(after_done);
  EXPECT_EQ(role_chunks, 1);
  EXPECT_EQ(usage_chunks, 1);
  EXPECT_GT(chunks, 3);
  EXPECT_EQ(text, w["choices"][0]["message"]["content"]);
  EXPECT_EQ(finish, w["choices"][0]["finish_reason"]);
  EXPECT_EQ(logprob_tokens, w["usage"]["completion_tokens"].get<size_t>());
}

TEST_F(ServerHttp, StopStringsAndMaxTokens) {
  const auto ref = load_reference(shared_path("reference/stories260K.json").string());
  const auto& c = ref.cases[0];
  json body = {{"prompt", c.prompt}, {"max_tokens", 40}, {"temperature", 0}, {"stop", {"Lily", "zzz"}}};
  auto r = http_post(addr(), "/v1/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json j = parse(r.body);
  EXPECT_EQ(j["choices"][0]["text"], c.greedy_text.substr(0, c.greedy_text.find("Lily")));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  body["stop"] = "Lily";  // a plain string works too
  body["stream"] = true;
  std::string finish;
  EXPECT_EQ(streamed_text(addr(), body, &finish), c.greedy_text.substr(0, c.greedy_text.find("Lily")));
  EXPECT_EQ(finish, "stop");
  body.erase("stop");
  body["max_tokens"] = 3;
  body["stream"] = false;
  auto r3 = http_post(addr(), "/v1/completions", body.dump());
  EXPECT_EQ(parse(r3.body)["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(parse(r3.body)["usage"]["completion_tokens"], 3);
}

TEST_F(ServerHttp, BadRequestsGetOpenAIErrorsAndTheServerKeepsRunning) {
  const json ok_chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}};
  auto post = [&](const std::string& path, const std::string& body) { return http_post(addr(), path, body); };
  expect_openai_error(post("/v1/chat/completions", "{not json"), 400);
  expect_openai_error(post("/v1/chat/completions", "[1,2]"), 400);
  expect_openai_error(post("/v1/chat/completions", "{\"max_tokens\": 2}"), 400, "messages");
  expect_openai_error(post("/v1/chat/completions", "{\"messages\": \"hi\"}"), 400, "messages");
  auto with = [&](const char* key, json value) {
    json b = ok_chat;
    b[key] = std::move(value);
    return b.dump();
  };
  expect_openai_error(post("/v1/chat/completions", with("temperature", "hot")), 400, "temperature");
  expect_openai_error(post("/v1/chat/completions", with("temperature", 7)), 400, "temperature");
  expect_openai_error(post("/v1/chat/completions", with("max_tokens", "ten")), 400, "max_tokens");
  expect_openai_error(post("/v1/chat/completions", with("max_tokens", 0)), 400, "max_tokens");
  expect_openai_error(post("/v1/chat/completions", with("n", 2)), 400, "n");
  expect_openai_error(post("/v1/chat/completions", with("stop", 5)), 400, "stop");
  expect_openai_error(post("/v1/chat/completions", with("stream", "yes")), 400, "stream");
  expect_openai_error(post("/v1/chat/completions", with("top_logprobs", 3)), 400, "top_logprobs");
  expect_openai_error(post("/v1/completions", "{\"prompt\": 5}"), 400, "prompt");
  expect_openai_error(post("/v1/completions", "{\"prompt\": [1, 99999]}"), 400, "prompt");
  // Invalid UTF-8 inside a JSON string.
  expect_openai_error(post("/v1/completions", std::string("{\"prompt\": \"a\xff\xfe b\"}")), 400);
  // Context overflow: the numbers are in the message.
  json long_prompt = {{"prompt", std::vector<int>(300, 300)}, {"max_tokens", 4}};
  auto over = post("/v1/completions", long_prompt.dump());
  expect_openai_error(over, 400, "prompt");
  EXPECT_NE(over.body.find("256"), std::string::npos) << over.body;
  EXPECT_NE(over.body.find("300"), std::string::npos) << over.body;
  EXPECT_NE(over.body.find("context_length_exceeded"), std::string::npos) << over.body;
  json too_many = {{"prompt", "Once"}, {"max_tokens", 1000}};
  expect_openai_error(post("/v1/completions", too_many.dump()), 400, "prompt");
  // Body larger than --max-body-bytes.
  json huge = ok_chat;
  huge["messages"][0]["content"] = std::string(70000, 'a');
  expect_openai_error(post("/v1/chat/completions", huge.dump()), 413);
  // Unknown route.
  expect_openai_error(http_get(addr(), "/v1/nothing"), 404);

  auto health = http_get(addr(), "/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(parse(health.body)["status"], "ok");
  EXPECT_EQ(post("/v1/chat/completions", ok_chat.dump()).status, 200);
}

TEST_F(ServerHttp, ModelsListsTheServedModel) {
  auto r = http_get(addr(), "/v1/models");
  ASSERT_EQ(r.status, 200);
  json j = parse(r.body);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "stories");
  EXPECT_EQ(j["data"][0]["object"], "model");
}

// 32 streaming clients at once (16 run, the rest queue): every answer complete
// and identical to the same request answered alone (temperature 0, and seeded
// sampling), and /metrics agrees with what was sent.
TEST_F(ServerHttp, ThirtyTwoConcurrentStreamsAreCompleteCorrectAndCounted) {
  const std::vector<std::string> prompts = {"Once upon a time", "The cat sat", "Lily and Ben went to",
                                            "One day, a little bird"};
  auto request = [&](size_t i) {
    json b = {{"prompt", prompts[i % prompts.size()]}, {"max_tokens", 12 + static_cast<int>(i % 3) * 4},
              {"stream", true}, {"stream_options", {{"include_usage", true}}}};
    if (i % 8 < 6)
      b["temperature"] = 0;
    else
      b["temperature"] = 0.9, b["seed"] = static_cast<int>(i);
    return b;
  };
  // Alone first: one request at a time.
  std::vector<std::string> alone(32);
  for (size_t i = 0; i < 32; ++i) {
    bool done = false;
    alone[i] = streamed_text(addr(), request(i), nullptr, &done);
    ASSERT_TRUE(done);
  }
  const std::string before = settled_metrics(addr());

  std::vector<std::string> texts(32), finishes(32);
  std::vector<json> usages(32);
  std::vector<int> done(32, 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < 32; ++i)
    threads.emplace_back([&, i] {
      bool d = false;
      texts[i] = streamed_text(addr(), request(i), &finishes[i], &d, &usages[i]);
      done[i] = d;
    });
  for (auto& t : threads) t.join();
  int64_t prompt_tokens = 0, completion_tokens = 0;
  for (size_t i = 0; i < 32; ++i) {
    EXPECT_TRUE(done[i]) << "request " << i << " did not end with [DONE]";
    EXPECT_EQ(texts[i], alone[i]) << "request " << i << " differs beside 31 others";
    EXPECT_TRUE(finishes[i] == "length" || finishes[i] == "stop") << finishes[i];
    ASSERT_TRUE(usages[i].is_object()) << "request " << i << " has no usage chunk";
    prompt_tokens += usages[i]["prompt_tokens"].get<int64_t>();
    completion_tokens += usages[i]["completion_tokens"].get<int64_t>();
    if (finishes[i] == "length") {
      EXPECT_EQ(usages[i]["completion_tokens"], request(i)["max_tokens"]);
    }
  }
  const std::string after = settled_metrics(addr());
  EXPECT_EQ(metric(after, "rayo_prompt_tokens_total") - metric(before, "rayo_prompt_tokens_total"), prompt_tokens);
  EXPECT_EQ(metric(after, "rayo_generated_tokens_total") - metric(before, "rayo_generated_tokens_total"),
            completion_tokens);
  EXPECT_EQ(metric(after, "rayo_requests_finished_total") - metric(before, "rayo_requests_finished_total"), 32);
  EXPECT_EQ(metric(after, "rayo_time_to_first_token_seconds_count") -
                metric(before, "rayo_time_to_first_token_seconds_count"),
            32);
  EXPECT_EQ(metric(after, "rayo_inter_token_latency_seconds_count") -
                metric(before, "rayo_inter_token_latency_seconds_count"),
            completion_tokens - 32);
  EXPECT_EQ(metric(after, "rayo_queue_length"), 0);
  EXPECT_EQ(metric(after, "rayo_running_sequences"), 0);
  EXPECT_EQ(metric(after, "rayo_kv_cache_blocks_used"), 0);
  EXPECT_EQ(metric(after, "rayo_kv_cache_blocks_total"), 16 * 16);
  EXPECT_EQ(metric(after, "rayo_preemptions_total"), 0) << "a pool of --parallel full contexts never runs out";
  EXPECT_EQ(metric(after, "rayo_recomputed_tokens_total"), 0);
  EXPECT_GT(metric(after, "rayo_batch_step_tokens_total") - metric(before, "rayo_batch_step_tokens_total"),
            metric(after, "rayo_batch_steps_total") - metric(before, "rayo_batch_steps_total"));  // batched
  // Every step's time, split into its phases.
  const double steps = metric(after, "rayo_batch_steps_total") - metric(before, "rayo_batch_steps_total");
  for (const char* phase : {"schedule", "compute", "deliver"}) {
    const std::string name = std::string("rayo_step_") + phase + "_seconds";
    EXPECT_EQ(metric(after, name + "_count") - metric(before, name + "_count"), steps) << phase;
    EXPECT_GT(metric(after, name + "_sum") - metric(before, name + "_sum"), 0.0) << phase;
  }
  const std::regex ok_count("rayo_requests_total\\{status=\"200\"\\} ([0-9]+)");
  std::smatch m1, m2;
  ASSERT_TRUE(std::regex_search(before, m1, ok_count));
  ASSERT_TRUE(std::regex_search(after, m2, ok_count));
  EXPECT_GE(std::stoll(m2[1]) - std::stoll(m1[1]), 32);
}

// Without `stream` nothing is written until the end, so the server watches
// the socket: a client that gives up (here: its read times out and it closes
// the connection) has its request cancelled, long before the request would
// have ended (2000 tokens, most of this model's 2048 context).
TEST(ServerDisconnect, AClientThatLeavesANonStreamingRequestFreesItsSequence) {
  RAYO_REQUIRE_SHARED();
  ServerProcess s({"-m", stories(), "-c", "0", "-t", "1", "--parallel", "1"});
  ASSERT_TRUE(s.ok());
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 2000}, {"ignore_eos", true}};
  const auto r = http_post(s.address(), "/v1/completions", body.dump(), "application/json", 0.3);
  EXPECT_EQ(r.status, 0) << "the request ended within 0.3 s: " << r.body.substr(0, 200);
  std::string m;
  for (int i = 0; i < 200; ++i) {
    m = http_get(s.address(), "/metrics").body;
    // The gauges follow a moment after the response (the scheduler's thread).
    if (metric(m, "rayo_requests_finished_total") >= 1 ||
        (m.find("{status=\"499\"} 1") != std::string::npos && metric(m, "rayo_running_sequences") == 0))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(m.find("rayo_requests_total{status=\"499\"} 1"), std::string::npos) << m;  // "client closed request"
  EXPECT_EQ(metric(m, "rayo_requests_cancelled_total"), 1) << m;
  EXPECT_EQ(metric(m, "rayo_requests_finished_total"), 0) << m;
  EXPECT_EQ(metric(m, "rayo_kv_cache_blocks_used"), 0) << m;
  EXPECT_EQ(metric(m, "rayo_running_sequences"), 0) << m;
  // The server goes on serving.
  const auto next = http_post(s.address(), "/v1/completions", json({{"prompt", "Once"}, {"max_tokens", 3}}).dump());
  EXPECT_EQ(next.status, 200) << next.body;
  EXPECT_EQ(s.stop(), 0);
}

// A streaming client that leaves after three events: the server notices at
// its next write and frees the sequence. The request asks for most of the
// context (2000 tokens, seconds of work), so that it cannot end on its own
// before the client has gone, however loaded the machine.
TEST(ServerDisconnect, AClientThatLeavesAStreamFreesItsSequence) {
  RAYO_REQUIRE_SHARED();
  ServerProcess s({"-m", stories(), "-c", "0", "-t", "1", "--parallel", "1"});
  ASSERT_TRUE(s.ok());
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 2000}, {"ignore_eos", true}, {"stream", true}};
  int events = 0;
  post_stream(s.address(), "/v1/completions", body.dump(), [&](const std::string&) { return ++events < 3; });
  EXPECT_EQ(events, 3);
  std::string m;
  for (int i = 0; i < 200; ++i) {
    m = http_get(s.address(), "/metrics").body;
    // The gauges follow a moment after the cancellation (the scheduler's thread).
    if (metric(m, "rayo_requests_finished_total") >= 1 ||
        (metric(m, "rayo_requests_cancelled_total") >= 1 && metric(m, "rayo_kv_cache_blocks_used") == 0 &&
         metric(m, "rayo_running_sequences") == 0))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(metric(m, "rayo_requests_finished_total"), 0) << "the request ended before the client left";
  EXPECT_EQ(metric(m, "rayo_requests_cancelled_total"), 1) << m;
  EXPECT_EQ(metric(m, "rayo_kv_cache_blocks_used"), 0) << m;
  EXPECT_EQ(metric(m, "rayo_running_sequences"), 0) << m;
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerAuth, ApiKeyIsRequiredExceptForHealth) {
  RAYO_REQUIRE_SHARED();
  ServerProcess s({"-m", stories(), "-c", "128", "-t", "1", "--api-key", "sekrit"});
  ASSERT_TRUE(s.ok());
  const std::string body = json{{"prompt", "Once"}, {"max_tokens", 2}}.dump();
  expect_openai_error(http_post(s.address(), "/v1/completions", body), 401);
  expect_openai_error(http_post(s.address("wrong"), "/v1/completions", body), 401);
  expect_openai_error(http_get(s.address(), "/v1/models"), 401);
  EXPECT_EQ(http_post(s.address("sekrit"), "/v1/completions", body).status, 200);
  EXPECT_EQ(http_get(s.address(), "/health").status, 200);
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerQueue, BeyondTheQueueRequestsGet503WithRetryAfter) {
  RAYO_REQUIRE_SHARED();
  ServerProcess s({"-m", stories(), "-c", "2048", "-t", "1", "--parallel", "1", "--max-queue", "0"});
  ASSERT_TRUE(s.ok());
  std::atomic<bool> running{false}, release{false};
  std::thread long_request([&] {
    json body = {{"prompt", "Once"}, {"max_tokens", 2000}, {"ignore_eos", true}, {"stream", true}};
    post_stream(s.address(), "/v1/completions", body.dump(), [&](const std::string&) {
      running = true;
      return !release.load();
    });
  });
  for (int i = 0; i < 3000 && !running; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!running) {
    release = true;
    long_request.join();
    FAIL() << "the long request never started streaming";
  }
  auto busy = http_post(s.address(), "/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 2}}.dump());
  release = true;
  long_request.join();
  expect_openai_error(busy, 503);
  EXPECT_FALSE(busy.header("Retry-After").empty());
  // Once the first request is gone, the server takes work again.
  tools::HttpResult ok;
  for (int i = 0; i < 100; ++i) {
    ok = http_post(s.address(), "/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 2}}.dump());
    if (ok.status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerShutdown, SigtermFinishesInFlightStreamsAndExitsZero) {
  RAYO_REQUIRE_SHARED();
  ServerProcess s({"-m", stories(), "-c", "256", "-t", "1"});
  ASSERT_TRUE(s.ok());
  std::atomic<bool> started{false};
  bool done = false;
  std::string finish;
  int status = 0;
  std::thread client([&] {
    json body = {{"prompt", "Once upon a time"}, {"max_tokens", 200}, {"ignore_eos", true}, {"stream", true}};
    auto r = post_stream(s.address(), "/v1/completions", body.dump(), [&](const std::string& data) {
      started = true;
      if (data == "[DONE]") done = true;
      else if (auto c = json::parse(data); !c["choices"].empty() && c["choices"][0]["finish_reason"].is_string())
        finish = c["choices"][0]["finish_reason"];
      return true;
    });
    status = r.status;
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(s.stop(SIGTERM), 0);
  client.join();
  EXPECT_EQ(status, 200);
  EXPECT_TRUE(done) << "the in-flight stream was cut off";
  EXPECT_EQ(finish, "length");
}

TEST(ServerCli, RefusesBadFlagsWithOneLine) {
  RAYO_REQUIRE_SHARED();
  auto r = run_command(rayo_binary().string() + " serve -m " + stories() + " --parallel 0 --port 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--parallel"), std::string::npos) << r.output;
  auto missing = run_command(rayo_binary().string() + " serve -m /nonexistent.gguf --port 0");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("nonexistent"), std::string::npos) << missing.output;
  // The KV cache sized from a GPU's memory needs a GPU; its size is given once.
  auto on_cpu = run_command(rayo_binary().string() + " serve -m " + stories() + " --device cpu --kv-fraction 0.5 --port 0");
  EXPECT_NE(on_cpu.exit_code, 0);
  EXPECT_NE(on_cpu.output.find("--kv-blocks"), std::string::npos) << on_cpu.output;
  auto both = run_command(rayo_binary().string() + " serve -m " + stories() +
                          " --kv-blocks 64 --kv-fraction 0.5 --port 0");
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.output.find("once"), std::string::npos) << both.output;
  auto share = run_command(rayo_binary().string() + " serve -m " + stories() + " --kv-fraction 1.5 --port 0");
  EXPECT_NE(share.exit_code, 0);
  EXPECT_NE(share.output.find("(0, 1]"), std::string::npos) << share.output;
}

// The load generator against a server it starts: --passes interleaves the
// client counts, and every ratio is to the first count of its own pass.
TEST(BenchServe, PassesInterleaveTheClientCountsWithRatiosToTheirOwnPass) {
  RAYO_REQUIRE_SHARED();
  const auto r = run_command(rayo_binary().string() + " bench-serve -m " + stories() +
                                 " --serve-args '--parallel 2 -t 2 -c 128' -N 1 -N 2 -r 2 -n 6 -p 4 --passes 2 --json",
                             false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j.size(), 4u) << r.output;
  const int passes[] = {1, 1, 2, 2}, clients[] = {1, 2, 1, 2};
  for (size_t i = 0; i < 4; ++i) {
    const auto& round = j[i];
    EXPECT_EQ(round["pass"], passes[i]);
    EXPECT_EQ(round["clients"], clients[i]);
    EXPECT_EQ(round["failures"], 0);
    EXPECT_EQ(round["output_tokens"], clients[i] * 2 * 6) << "every request streams its 6 tokens";
    const double base = j[i - i % 2]["output_tokens_per_second"].get<double>();
    EXPECT_NEAR(round["output_tokens_per_second_ratio"].get<double>(),
                round["output_tokens_per_second"].get<double>() / base, 1e-9);
    // This model is fast enough that a stream's tokens may arrive together in
    // one chunk: no inter-token gap, and then no ratio to it.
    const double base_itl = j[i - i % 2]["itl_p99_ms"].get<double>();
    if (base_itl > 0)
      EXPECT_NEAR(round["itl_p99_ratio"].get<double>(), round["itl_p99_ms"].get<double>() / base_itl, 1e-9);
    else
      EXPECT_TRUE(round["itl_p99_ratio"].is_null()) << round;
  }
  EXPECT_NE(run_command(rayo_binary().string() + " bench-serve -m " + stories() + " -N 1 --passes 0").exit_code, 0);
}

// --verbose promises the compute graph and its buffer plan: the server builds
// one step graph per batch bucket at start-up, and each is described on stderr
// (the scheduler once dropped the flag, and serve --verbose printed nothing).
TEST(ServerVerbose, DescribesEveryStepGraphOnStderr) {
  RAYO_REQUIRE_SHARED();
  char path[] = "/tmp/rayo-serve-verbose-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  // The child inherits this process's stderr: point it at the file meanwhile.
  fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  bool started = false;
  {
    ServerProcess server({"-m", stories(), "-c", "64", "-t", "1", "--parallel", "3", "--prefill-chunk", "8",
                          "--verbose"});
    started = server.ok();
  }
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(fd);
  std::ifstream in(path);
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path);
  ASSERT_TRUE(started) << log;
  // Buckets of 1, 2, 4 and 8 tokens, then parallel + prefill chunk = 11.
  for (int bucket : {1, 2, 4, 8, 11})
    EXPECT_NE(log.find("up to " + std::to_string(bucket) + " tokens"), std::string::npos) << bucket << "\n" << log;
}

}  // namespace
}  // namespace rayo::test
