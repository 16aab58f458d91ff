// Request parsing and response shapes of the OpenAI API layer, without sockets.
#include <gtest/gtest.h>

#include "server/openai_api.h"
#include "support/paths.h"

namespace rayo::server {
namespace {

std::shared_ptr<const runtime::Model> stories() {
  static auto m = runtime::Model::load(test::shared_path("models/stories260K.gguf").string());
  return m;
}

ApiError error_of(const json& body, Endpoint e = Endpoint::Chat) {
  try {
    if (e == Endpoint::Chat)
      parse_chat_request(body, *stories());
    else
      parse_completion_request(body, *stories());
  } catch (const ApiError& err) {
    return err;
  }
  ADD_FAILURE() << "accepted: " << body.dump();
  return ApiError(0, "");
}

const json kChat = {{"messages", {{{"role", "user"}, {"content", "Hello"}}}}};

TEST(ServerOpenAIApi, ChatDefaultsFollowOpenAI) {
  RAYO_REQUIRE_SHARED();
  const auto r = parse_chat_request(kChat, *stories());
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.request.max_tokens, -1);
  EXPECT_FLOAT_EQ(r.request.sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(r.request.sampling.top_p, 1.0f);
  EXPECT_EQ(r.request.sampling.top_k, 0);
  EXPECT_EQ(r.request.logprobs, -1);
  EXPECT_NE(r.prompt_text.find("Hello"), std::string::npos);
  ASSERT_FALSE(r.request.prompt.empty());
  EXPECT_EQ(r.request.prompt[0], stories()->tokenizer().bos());  // exactly one BOS
  EXPECT_NE(r.request.prompt[1], stories()->tokenizer().bos());
}

TEST(ServerOpenAIApi, ChatParametersAreRead) {
  RAYO_REQUIRE_SHARED();
  json b = kChat;
  b["max_completion_tokens"] = 7;
  b["temperature"] = 0;
  b["top_p"] = 0.5;
  b["seed"] = 42;
  b["stop"] = {"a", "b"};
  b["stream"] = true;
  b["stream_options"] = {{"include_usage", true}};
  b["logprobs"] = true;
  b["top_logprobs"] = 3;
  b["unknown"] = {{"x", 1}};
  b["messages"][0]["content"] = {{{"type", "text"}, {"text", "Hel"}}, {{"type", "text"}, {"text", "lo"}}};
  const auto r = parse_chat_request(b, *stories());
  EXPECT_EQ(r.request.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.request.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(r.request.sampling.top_p, 0.5f);
  EXPECT_EQ(r.request.sampling.seed, 42u);
  EXPECT_EQ(r.request.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.request.logprobs, 3);
  EXPECT_NE(r.prompt_text.find("Hello"), std::string::npos);
}

TEST(ServerOpenAIApi, WrongTypesAndRangesNameTheParameter) {
  RAYO_REQUIRE_SHARED();
  auto with = [](const char* k, json v) {
    json b = kChat;
    b[k] = std::move(v);
    return b;
  };
  EXPECT_EQ(error_of(with("temperature", "1")).param, "temperature");
  EXPECT_EQ(error_of(with("temperature", -1)).param, "temperature");
  EXPECT_EQ(error_of(with("top_p", 2)).param, "top_p");
  EXPECT_EQ(error_of(with("max_tokens", 1.5)).param, "max_tokens");
  EXPECT_EQ(error_of(with("n", 3)).param, "n");
  EXPECT_EQ(error_of(with("seed", "x")).param, "seed");
  EXPECT_EQ(error_of(with("stop", json::array({1}))).param, "stop");
  EXPECT_EQ(error_of(with("stop", "")).param, "stop");
  EXPECT_EQ(error_of(with("stream_options", 1)).param, "stream_options");
  EXPECT_EQ(error_of(with("messages", json::array())).param, "messages");
  EXPECT_EQ(error_of(with("messages", json::array({1}))).param, "messages[0]");
  EXPECT_EQ(error_of(with("messages", json::array({{{"content", "x"}}}))).param, "messages[0].role");
  EXPECT_EQ(error_of(json::array()).status, 400);
  const ApiError e = error_of(with("n", 2));
  EXPECT_EQ(e.status, 400);
  const json body = e.body();
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["param"], "n");
  EXPECT_TRUE(body["error"].contains("code"));
  EXPECT_TRUE(body["error"]["message"].is_string());
}

TEST(ServerOpenAIApi, CompletionPromptsAsTextOrTokenIds) {
  RAYO_REQUIRE_SHARED();
  const auto text = parse_completion_request({{"prompt", "Once upon a time"}}, *stories());
  EXPECT_EQ(text.request.prompt, (std::vector<int32_t>{1, 403, 407, 261, 378}));  // llama.cpp's tokens
  EXPECT_EQ(text.request.max_tokens, 16);                                        // the legacy default
  const auto ids = parse_completion_request({{"prompt", {1, 403, 407}}, {"max_tokens", 3}}, *stories());
  EXPECT_EQ(ids.request.prompt, (std::vector<int32_t>{1, 403, 407}));
  const auto nested = parse_completion_request({{"prompt", {{1, 5}}}}, *stories());
  EXPECT_EQ(nested.request.prompt, (std::vector<int32_t>{1, 5}));
  EXPECT_EQ(error_of({{"prompt", {"a", "b"}}}, Endpoint::Completion).param, "prompt");
  EXPECT_EQ(error_of({{"prompt", {1, 100000}}}, Endpoint::Completion).param, "prompt");
  EXPECT_EQ(error_of({{"prompt", 3}}, Endpoint::Completion).param, "prompt");
  EXPECT_EQ(error_of({{"max_tokens", 3}}, Endpoint::Completion).param, "prompt");
  EXPECT_EQ(error_of({{"prompt", "x"}, {"logprobs", 50}}, Endpoint::Completion).param, "logprobs");
}

TEST(ServerOpenAIApi, ResponseShapes) {
  RAYO_REQUIRE_SHARED();
  ResponseContext ctx{"chatcmpl-1", "m", 123, Endpoint::Chat, stories().get(), true};
  runtime::RequestStream::Update u;
  u.text = "hi";
  u.tokens = {{403, -0.5f, {{403, -0.5f}, {407, -1.5f}}}};
  u.done = true;
  u.finish = runtime::FinishReason::Length;
  u.prompt_tokens = 4;
  u.completion_tokens = 1;
  const json full = full_response(ctx, u);
  EXPECT_EQ(full["object"], "chat.completion");
  EXPECT_EQ(full["choices"][0]["message"]["content"], "hi");
  EXPECT_EQ(full["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(full["usage"]["total_tokens"], 5);
  const json& lp = full["choices"][0]["logprobs"]["content"][0];
  EXPECT_FLOAT_EQ(lp["logprob"].get<float>(), -0.5f);
  EXPECT_EQ(lp["top_logprobs"].size(), 2u);
  EXPECT_EQ(lp["token"], stories()->tokenizer().token_to_piece(403, true));

  const json first = stream_chunk(ctx, "", {}, nullptr, true, true, 0);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(first["usage"].is_null());
  const auto reason = runtime::FinishReason::Stop;
  const json last = stream_chunk(ctx, "", {}, &reason, false, false, 0);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
  EXPECT_FALSE(last.contains("usage"));
  const json usage = usage_chunk(ctx, 4, 1, 2);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 2);

  ctx.endpoint = Endpoint::Completion;
  const json legacy = full_response(ctx, u);
  EXPECT_EQ(legacy["object"], "text_completion");
  EXPECT_EQ(legacy["choices"][0]["text"], "hi");
  EXPECT_EQ(legacy["choices"][0]["logprobs"]["tokens"].size(), 1u);
  EXPECT_EQ(legacy["choices"][0]["logprobs"]["text_offset"][0], 0);
  EXPECT_EQ(make_id("cmpl-").size(), 5u + 24u);
  EXPECT_NE(make_id("x"), make_id("x"));
}

}  // namespace
}  // namespace rayo::server
