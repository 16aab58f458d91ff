#include "server/request_handlers.h"

#include <httplib.h>

#include <chrono>

#include "common/strings.h"
#include "server/client_watch.h"

namespace rayo::server {
namespace {

using namespace std::chrono_literals;

std::string sse(const json& j) { return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n"; }

ApiError from_submit_error(const runtime::SubmitError& e) {
  switch (e.kind) {
    case runtime::SubmitError::TooLong: return ApiError(400, e.what(), "messages", "context_length_exceeded");
    case runtime::SubmitError::QueueFull:
      return ApiError(503, e.what(), "", "server_busy", "server_error");
    case runtime::SubmitError::ShuttingDown:
      return ApiError(503, e.what(), "", "shutting_down", "server_error");
    case runtime::SubmitError::Invalid: break;
  }
  return ApiError(400, e.what());
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A request body parsed and checked against the model. Throws ApiError.
ApiRequest parse_request(Endpoint endpoint, const std::string& body_text, const runtime::Model& model) {
  json body;
  try {
    body = json::parse(body_text);
  } catch (const json::parse_error& e) {
    throw ApiError(400, cat("the request body is not valid JSON (UTF-8): ", e.what()), "", "invalid_json");
  }
  return endpoint == Endpoint::Chat ? parse_chat_request(body, model) : parse_completion_request(body, model);
}

// One streaming response: writes each update of the generation as a chunk
// while httplib asks for more, and remembers where it is between the calls.
class EventStream {
 public:
  EventStream(std::shared_ptr<runtime::RequestStream> stream, ResponseContext ctx, bool include_usage)
      : stream_(std::move(stream)), ctx_(std::move(ctx)), include_usage_(include_usage) {}

  // httplib's content provider: false ends the response (the client left),
  // true with sink.done() ends it whole, true alone asks to be called again.
  bool write_next(httplib::DataSink& sink) {
    if (ctx_.endpoint == Endpoint::Chat && !role_sent_) {
      role_sent_ = true;
      if (!write(sink, sse(stream_chunk(ctx_, "", {}, nullptr, true, include_usage_, 0)))) return false;
    }
    runtime::RequestStream::Update u;
    if (!stream_->next(u, 1000ms)) {
      // Nothing new: a comment line keeps the connection honest, so a
      // client that went away is noticed and its sequence freed.
      if (std::chrono::steady_clock::now() - last_write_ > 2s) return write(sink, ": keep-alive\n\n");
      return true;
    }
    if (!u.text.empty() || !u.tokens.empty()) {
      if (!write(sink, sse(stream_chunk(ctx_, u.text, u.tokens, nullptr, false, include_usage_, text_offset_))))
        return false;
      text_offset_ += u.text.size();
    }
    if (!u.done) return true;
    return write_end(sink, u);
  }

  // No-op when the generation already finished; frees the sequence when the client left.
  void cancel() { stream_->cancel(); }

 private:
  // The last update: the finish reason (or the error), the usage when asked for, then [DONE].
  bool write_end(httplib::DataSink& sink, const runtime::RequestStream::Update& u) {
    if (!u.error.empty()) {
      write(sink, sse(ApiError(500, u.error, "", "internal_error", "server_error").body()));
    } else {
      if (!write(sink, sse(stream_chunk(ctx_, "", {}, &u.finish, false, include_usage_, text_offset_)))) return false;
      if (include_usage_ &&
          !write(sink, sse(usage_chunk(ctx_, u.prompt_tokens, u.completion_tokens, u.cached_prompt_tokens))))
        return false;
    }
    if (!write(sink, "data: [DONE]\n\n")) return false;
    sink.done();
    return true;
  }

  bool write(httplib::DataSink& sink, const std::string& s) {
    if (!sink.write(s.data(), s.size())) return false;
    last_write_ = std::chrono::steady_clock::now();
    return true;
  }

  const std::shared_ptr<runtime::RequestStream> stream_;
  const ResponseContext ctx_;
  const bool include_usage_;
  bool role_sent_ = false;
  size_t text_offset_ = 0;
  std::chrono::steady_clock::time_point last_write_ = std::chrono::steady_clock::now();
};

}  // namespace

void send_error(httplib::Response& res, const ApiError& e) {
  if (e.status == 503) res.set_header("Retry-After", "1");
  send_json(res, e.status, e.body());
}

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

RequestHandlers::RequestHandlers(runtime::Scheduler& scheduler, std::string model_name)
    : scheduler_(scheduler), model_name_(std::move(model_name)) {}

json RequestHandlers::model_entry() const {
  const auto& spec = scheduler_.model().spec();
  return {{"id", model_name_},
          {"object", "model"},
          {"created", unix_now()},
          {"owned_by", "rayo"},
          {"meta", {{"arch", spec.arch}, {"n_ctx", scheduler_.options().max_seq_len}, {"n_vocab", spec.n_vocab}}}};
}

void RequestHandlers::chat(const httplib::Request& req, httplib::Response& res) { generate(Endpoint::Chat, req, res); }

void RequestHandlers::completion(const httplib::Request& req, httplib::Response& res) {
  generate(Endpoint::Completion, req, res);
}

void RequestHandlers::generate(Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
  ApiRequest api;
  std::shared_ptr<runtime::RequestStream> stream;
  try {
    api = parse_request(endpoint, req.body, scheduler_.model());
    stream = scheduler_.submit(api.request);
  } catch (const ApiError& e) {
    return send_error(res, e);
  } catch (const runtime::SubmitError& e) {
    ApiError err = from_submit_error(e);
    if (err.param == "messages" && endpoint == Endpoint::Completion) err.param = "prompt";
    return send_error(res, err);
  } catch (const Error& e) {
    return send_error(res, ApiError(400, e.what()));
  }
  ResponseContext ctx;
  ctx.id = make_id(endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-");
  ctx.model = model_name_;
  ctx.created = unix_now();
  ctx.endpoint = endpoint;
  ctx.engine = &scheduler_.model();
  ctx.logprobs = api.request.logprobs >= 0;

  if (api.stream) return answer_streaming(res, std::move(stream), std::move(ctx), api.include_usage);
  answer_whole(req, res, *stream, ctx);
}

void RequestHandlers::answer_whole(const httplib::Request& req, httplib::Response& res,
                                   runtime::RequestStream& stream, const ResponseContext& ctx) {
  // Nothing is written until the end, so only the socket tells that the
  // client left (and no one waits for the rest of the generation).
  const ClientWatch client(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  const auto result = stream.wait([&] { return client.client_gone(); });
  if (stream.cancelled()) {
    res.status = 499;  // nginx's "client closed request": what /metrics counts; no one reads it
    return;
  }
  if (!result.error.empty()) return send_error(res, ApiError(500, result.error, "", "internal_error", "server_error"));
  send_json(res, 200, full_response(ctx, result));
}

void RequestHandlers::answer_streaming(httplib::Response& res, std::shared_ptr<runtime::RequestStream> stream,
                                       ResponseContext ctx, bool include_usage) {
  auto events = std::make_shared<EventStream>(std::move(stream), std::move(ctx), include_usage);
  ++streams_open_;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [events](size_t, httplib::DataSink& sink) { return events->write_next(sink); },
      [this, events](bool) {
        events->cancel();
        --streams_open_;
      });
}

}  // namespace rayo::server
