#pragma once
// A small client of rayo's (or any OpenAI-compatible) server: posts a JSON
// request and reads the server-sent events of a streamed answer as they
// arrive. Used by `rayo bench-serve` and the server tests.
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rayo::tools {

struct HttpResult {
  int status = 0;             // 0: no answer (connection failed)
  std::string body;           // the whole body (non-streamed answers, errors)
  std::string error;          // transport error, when status is 0
  std::vector<std::pair<std::string, std::string>> headers;
  std::string header(const std::string& name) const;
};

struct ServerAddress {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;
};

// Splits "http://HOST:PORT" (path ignored). Throws on anything else.
ServerAddress parse_url(const std::string& url);

HttpResult http_get(const ServerAddress& ep, const std::string& path, double timeout_s = 60);
HttpResult http_post(const ServerAddress& ep, const std::string& path, const std::string& body,
                     const std::string& content_type = "application/json", double timeout_s = 120);

// Posts `body` and calls on_event with each `data:` payload as it arrives
// ("[DONE]" included). Return false from on_event to hang up.
HttpResult post_stream(const ServerAddress& ep, const std::string& path, const std::string& body,
                       const std::function<bool(const std::string& data)>& on_event, double timeout_s = 120);

}  // namespace rayo::tools
