#pragma once
// rayo's HTTP server: OpenAI's API over the continuous-batching scheduler (a
// language model), a Whisper model, or both.
//
//   POST /v1/chat/completions       chat (the model's template), streaming or not
//   POST /v1/completions            raw prompt (text or token ids)
//   POST /v1/audio/transcriptions   speech to text (multipart upload)
//   POST /v1/audio/translations     speech to English text
//   GET  /v1/models                 the models served
//   GET  /health                    200 {"status":"ok"} (no API key needed)
//   GET  /metrics                   Prometheus text
//
// Every error is OpenAI's error JSON; the server keeps running. A route whose
// model is not loaded answers 404 saying which flag loads it.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/scheduler.h"
#include "server/audio_handlers.h"

namespace httplib {
class Server;
}

namespace rayo::server {

class RequestHandlers;
class AudioHandlers;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                      // 0: any free port
  std::string api_key;                  // empty: no authentication
  std::string model_name;               // as /v1/models and responses name it
  size_t max_body_bytes = 25u << 20;    // larger bodies get 413 (OpenAI's upload limit is 25 MB)
  int http_threads = 0;                 // 0: enough for every sequence and queued request
  AudioServiceOptions audio;            // with a Whisper model
};

class HttpServer {
 public:
  // Serves a language model (scheduler), a Whisper model (transcriber) or
  // both; either may be null, not both. They must outlive the server.
  HttpServer(runtime::Scheduler* scheduler, whisper::Transcriber* transcriber, ServerOptions options);
  ~HttpServer();

  // Binds the socket; returns the port (useful with port 0). Throws on failure.
  int bind();
  // Serves until stop(); returns when every connection has been handled.
  void run();
  // Stops accepting connections (safe from any thread).
  void stop();

  // Streaming responses still being written.
  int64_t streams_open() const;
  // Transcriptions running or waiting (0 without a Whisper model).
  int64_t audio_in_flight() const;

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

  runtime::Scheduler* scheduler_;
  ServerOptions options_;
  // Before http_, so that they outlive every connection's handler. Each is
  // null when its model is not served.
  std::unique_ptr<RequestHandlers> handlers_;
  std::unique_ptr<AudioHandlers> audio_;
  std::unique_ptr<httplib::Server> http_;
  mutable std::mutex status_mutex_;
  std::map<int, uint64_t> responses_by_status_;
  int listen_socket_ = -1;
};

}  // namespace rayo::server
