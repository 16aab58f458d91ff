#pragma once
// OpenAI's HTTP API, the parts rayo serves: requests (JSON) -> scheduler
// requests, results -> OpenAI's response and stream-chunk shapes. No sockets
// here (http_server.cpp, request_handlers.cpp), so every rule is unit-testable.
//
// Parameters follow OpenAI's meaning; unknown fields are ignored, fields of the
// wrong type or out of range are refused with ApiError (HTTP 400, OpenAI's
// error JSON). llama.cpp's extensions top_k, min_p, repeat_penalty and
// ignore_eos are accepted too.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/scheduler.h"

namespace rayo::server {

using json = nlohmann::json;

// An error answered in OpenAI's shape:
// {"error": {"message", "type", "param", "code"}}.
struct ApiError : std::exception {
  int status = 400;
  std::string message, type = "invalid_request_error", param, code;
  ApiError(int status, std::string message, std::string param = {}, std::string code = {},
           std::string type = "invalid_request_error")
      : status(status), message(std::move(message)), type(std::move(type)), param(std::move(param)),
        code(std::move(code)) {}
  const char* what() const noexcept override { return message.c_str(); }
  json body() const;
};

enum class Endpoint { Chat, Completion };

struct ApiRequest {
  Endpoint endpoint = Endpoint::Chat;
  runtime::Request request;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string prompt_text;     // what was tokenized (the rendered chat, or the raw prompt)
};

// Parses and validates a request body against the model (chat template,
// tokenizer). Throws ApiError.
ApiRequest parse_chat_request(const json& body, const runtime::Model& model);
ApiRequest parse_completion_request(const json& body, const runtime::Model& model);

// The model's conversation rendered with its chat template (a default one when
// the file has none), ready to tokenize.
std::string render_chat(const runtime::Model& model, const json& messages);

// Response shapes. `id` is "chatcmpl-..." / "cmpl-...", `model` the served name.
struct ResponseContext {
  std::string id;
  std::string model;
  int64_t created = 0;
  Endpoint endpoint = Endpoint::Chat;
  const runtime::Model* engine = nullptr;  // token pieces for logprobs
  bool logprobs = false;
};

// OpenAI's usage object; prompt_tokens_details.cached_tokens counts the prompt
// tokens taken from the prefix cache.
json usage_json(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_prompt_tokens);
std::string finish_reason(runtime::FinishReason r);  // "stop" or "length"
// Logprobs of some generated tokens in the endpoint's shape (chat: {"content":
// [...]}, completions: {"tokens", "token_logprobs", "top_logprobs", "text_offset"}).
json logprobs_json(const ResponseContext& ctx, const std::vector<runtime::GeneratedToken>& tokens,
                   size_t text_offset = 0);
// The whole response of a non-streaming request.
json full_response(const ResponseContext& ctx, const runtime::RequestStream::Update& result);
// One streamed chunk: text and tokens (may be empty); finish set on the last one.
json stream_chunk(const ResponseContext& ctx, const std::string& text,
                  const std::vector<runtime::GeneratedToken>& tokens, const runtime::FinishReason* finish,
                  bool role, bool with_usage_null, size_t text_offset);
json usage_chunk(const ResponseContext& ctx, int64_t prompt_tokens, int64_t completion_tokens,
                 int64_t cached_prompt_tokens);

// A fresh random id with a prefix ("chatcmpl-" + 24 hex digits).
std::string make_id(const std::string& prefix);

}  // namespace rayo::server
