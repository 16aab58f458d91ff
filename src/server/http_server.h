#pragma once
// rayo's HTTP server: OpenAI's API over the continuous-batching scheduler.
//
//   POST /v1/chat/completions   chat (the model's template), streaming or not
//   POST /v1/completions        raw prompt (text or token ids)
//   GET  /v1/models             the one model served
//   GET  /health                200 {"status":"ok"} (no API key needed)
//   GET  /metrics               Prometheus text
//
// Every error is OpenAI's error JSON; the server keeps running.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/scheduler.h"

namespace httplib {
class Server;
}

namespace rayo::server {

class RequestHandlers;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                      // 0: any free port
  std::string api_key;                  // empty: no authentication
  std::string model_name;               // as /v1/models and responses name it
  size_t max_body_bytes = 16u << 20;    // larger bodies get 413
  int http_threads = 0;                 // 0: enough for every sequence and queued request
};

class HttpServer {
 public:
  HttpServer(runtime::Scheduler& scheduler, ServerOptions options);
  ~HttpServer();

  // Binds the socket; returns the port (useful with port 0). Throws on failure.
  int bind();
  // Serves until stop(); returns when every connection has been handled.
  void run();
  // Stops accepting connections (safe from any thread).
  void stop();

  // Streaming responses still being written.
  int64_t streams_open() const;

  // The Prometheus text of /metrics.
  std::string metrics_text() const;

 private:
  // The constructor's steps, in order.
  void configure_connections();
  void count_responses();
  void answer_errors_as_json();
  void require_api_key();
  void add_routes();

  void count_status(int status);

  runtime::Scheduler& scheduler_;
  ServerOptions options_;
  // Before http_, so that it outlives every connection's handler.
  std::unique_ptr<RequestHandlers> handlers_;
  std::unique_ptr<httplib::Server> http_;
  mutable std::mutex status_mutex_;
  std::map<int, uint64_t> responses_by_status_;
  int listen_socket_ = -1;
};

}  // namespace rayo::server
