#pragma once
// What rayo serve answers to each request its language-model routes lead to:
// the model's entry in the model list, and a generation (chat or raw completion) from its JSON body through
// the scheduler to a whole answer or a stream of server-sent events. The
// server's set-up (connections, errors, API key, which path goes where) is
// http_server.cpp's.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/scheduler.h"
#include "server/openai_api.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace rayo::server {

// A JSON response with that status (invalid UTF-8 in strings replaced).
void send_json(httplib::Response& res, int status, const json& body);
// An error in OpenAI's shape (503s say when to retry).
void send_error(httplib::Response& res, const ApiError& e);

class RequestHandlers {
 public:
  RequestHandlers(runtime::Scheduler& scheduler, std::string model_name);

  // The model's entry in GET /v1/models, under its served name.
  json model_entry() const;
  // POST /v1/chat/completions: the messages rendered with the model's template.
  void chat(const httplib::Request& req, httplib::Response& res);
  // POST /v1/completions: a raw prompt (text or token ids).
  void completion(const httplib::Request& req, httplib::Response& res);

  // Streaming responses still being written.
  int64_t streams_open() const { return streams_open_.load(); }

 private:
  // Parses the body, submits it to the scheduler and answers; refusals are
  // answered in OpenAI's error shape.
  void generate(Endpoint endpoint, const httplib::Request& req, httplib::Response& res);
  // Waits for the whole generation, then answers it in one JSON body.
  void answer_whole(const httplib::Request& req, httplib::Response& res, runtime::RequestStream& stream,
                    const ResponseContext& ctx);
  // Answers with server-sent events as the generation goes, then [DONE].
  void answer_streaming(httplib::Response& res, std::shared_ptr<runtime::RequestStream> stream, ResponseContext ctx,
                        bool include_usage);

  runtime::Scheduler& scheduler_;
  const std::string model_name_;
  std::atomic<int64_t> streams_open_{0};
};

}  // namespace rayo::server
