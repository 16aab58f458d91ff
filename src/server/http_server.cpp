#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <sstream>

#include "common/strings.h"
#include "server/client_watch.h"
#include "server/openai_api.h"

namespace rayo::server {
namespace {

using namespace std::chrono_literals;

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  if (e.status == 503) res.set_header("Retry-After", "1");
  send_json(res, e.status, e.body());
}

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

void histogram(std::ostringstream& out, const std::string& name, const std::string& help,
               const runtime::LatencyHistogram& h) {
  const auto s = h.snapshot();
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
  for (size_t i = 0; i < s.bounds.size(); ++i) out << name << "_bucket{le=\"" << s.bounds[i] << "\"} " << s.cumulative[i] << "\n";
  out << name << "_bucket{le=\"+Inf\"} " << s.count << "\n";
  out << name << "_sum " << s.sum << "\n" << name << "_count " << s.count << "\n";
}

}  // namespace

HttpServer::HttpServer(runtime::Scheduler& scheduler, ServerOptions options)
    : scheduler_(scheduler), options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  auto& svr = *http_;
  const auto& sopt = scheduler_.options();
  const int threads = options_.http_threads > 0
                          ? options_.http_threads
                          : static_cast<int>(std::max<int64_t>(16, 2 * (sopt.max_seqs + sopt.max_queue) + 8));
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  svr.set_payload_max_length(options_.max_body_bytes);
  // httplib listens with a backlog of 5, too few for a burst of clients on a
  // busy machine (connections beyond it wait for SYN retries); keep the socket
  // to raise the backlog after binding (listen() again on Linux just resizes it).
  svr.set_socket_options([this](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_socket_ = sock;
  });
  svr.set_keep_alive_timeout(2);
  svr.set_read_timeout(30);
  svr.set_write_timeout(30);

  svr.set_logger([this](const httplib::Request&, const httplib::Response& res) { count_status(res.status); });
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404)
      send_json(res, 404, ApiError(404, cat("no route ", req.method, " ", req.path), "", "not_found").body());
    else if (res.status == 413)
      send_json(res, 413, ApiError(413, "the request body is too large", "", "request_too_large").body());
    else
      send_json(res, res.status, ApiError(res.status, cat("HTTP error ", res.status)).body());
  });
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_json(res, 500, ApiError(500, what, "", "internal_error", "server_error").body());
  });
  if (!options_.api_key.empty()) {
    svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
      const std::string expected = "Bearer " + options_.api_key;
      if (req.get_header_value("Authorization") == expected) return httplib::Server::HandlerResponse::Unhandled;
      send_json(res, 401,
                ApiError(401, "invalid or missing API key (send 'Authorization: Bearer KEY')", "", "invalid_api_key",
                         "authentication_error")
                    .body());
      return httplib::Server::HandlerResponse::Handled;
    });
  }

  svr.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"status", "ok"}});
  });
  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_text(), "text/plain; version=0.0.4");
  });
  auto models = [this](const httplib::Request&, httplib::Response& res) {
    const auto& spec = scheduler_.model().spec();
    json m = {{"id", options_.model_name},
              {"object", "model"},
              {"created", unix_now()},
              {"owned_by", "rayo"},
              {"meta", {{"arch", spec.arch}, {"n_ctx", scheduler_.options().max_seq_len}, {"n_vocab", spec.n_vocab}}}};
    send_json(res, 200, {{"object", "list"}, {"data", json::array({m})}});
  };
  svr.Get("/v1/models", models);
  svr.Get("/models", models);

  auto completion = [this](Endpoint endpoint) {
    return [this, endpoint](const httplib::Request& req, httplib::Response& res) {
      ApiRequest api;
      std::shared_ptr<runtime::RequestStream> stream;
      try {
        json body;
        try {
          body = json::parse(req.body);
        } catch (const json::parse_error& e) {
          throw ApiError(400, cat("the request body is not valid JSON (UTF-8): ", e.what()), "", "invalid_json");
        }
        api = endpoint == Endpoint::Chat ? parse_chat_request(body, scheduler_.model())
                                         : parse_completion_request(body, scheduler_.model());
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
      auto ctx = std::make_shared<ResponseContext>();
      ctx->id = make_id(endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-");
      ctx->model = options_.model_name;
      ctx->created = unix_now();
      ctx->endpoint = endpoint;
      ctx->engine = &scheduler_.model();
      ctx->logprobs = api.request.logprobs >= 0;

      if (!api.stream) {
        // Nothing is written until the end, so only the socket tells that the
        // client left (and no one waits for the rest of the generation).
        const ClientWatch client(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
        const auto result = stream->wait([&] { return client.client_gone(); });
        if (stream->cancelled()) {
          res.status = 499;  // nginx's "client closed request": what /metrics counts; no one reads it
          return;
        }
        if (!result.error.empty())
          return send_error(res, ApiError(500, result.error, "", "internal_error", "server_error"));
        return send_json(res, 200, full_response(*ctx, result));
      }

      // Streaming: server-sent events, one chunk per update, then [DONE].
      struct State {
        bool role_sent = false, finished = false;
        size_t text_offset = 0;
        std::chrono::steady_clock::time_point last_write = std::chrono::steady_clock::now();
      };
      auto state = std::make_shared<State>();
      const bool include_usage = api.include_usage;
      ++streams_open_;
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider(
          "text/event-stream",
          [this, stream, ctx, state, include_usage](size_t, httplib::DataSink& sink) {
            auto write = [&](const std::string& s) {
              if (!sink.write(s.data(), s.size())) return false;
              state->last_write = std::chrono::steady_clock::now();
              return true;
            };
            if (ctx->endpoint == Endpoint::Chat && !state->role_sent) {
              state->role_sent = true;
              if (!write(sse(stream_chunk(*ctx, "", {}, nullptr, true, include_usage, 0)))) return false;
            }
            runtime::RequestStream::Update u;
            if (!stream->next(u, 1000ms)) {
              // Nothing new: a comment line keeps the connection honest, so a
              // client that went away is noticed and its sequence freed.
              if (std::chrono::steady_clock::now() - state->last_write > 2s) return write(": keep-alive\n\n");
              return true;
            }
            if (!u.text.empty() || !u.tokens.empty()) {
              if (!write(sse(stream_chunk(*ctx, u.text, u.tokens, nullptr, false, include_usage, state->text_offset))))
                return false;
              state->text_offset += u.text.size();
            }
            if (!u.done) return true;
            state->finished = true;
            if (!u.error.empty()) {
              write(sse(ApiError(500, u.error, "", "internal_error", "server_error").body()));
            } else {
              if (!write(sse(stream_chunk(*ctx, "", {}, &u.finish, false, include_usage, state->text_offset))))
                return false;
              if (include_usage &&
                  !write(sse(usage_chunk(*ctx, u.prompt_tokens, u.completion_tokens, u.cached_prompt_tokens))))
                return false;
            }
            if (!write("data: [DONE]\n\n")) return false;
            sink.done();
            return true;
          },
          [this, stream](bool) {
            stream->cancel();  // no-op when it already finished; frees the sequence when the client left
            --streams_open_;
          });
    };
  };
  svr.Post("/v1/chat/completions", completion(Endpoint::Chat));
  svr.Post("/chat/completions", completion(Endpoint::Chat));
  svr.Post("/v1/completions", completion(Endpoint::Completion));
  svr.Post("/completions", completion(Endpoint::Completion));
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  if (options_.port < 0 || options_.port > 65535) fail("--port must be between 0 and 65535, got ", options_.port);
  if (options_.port == 0) {
    const int port = http_->bind_to_any_port(options_.host);
    if (port <= 0) fail("cannot listen on ", options_.host, " (any port)");
    if (listen_socket_ >= 0) ::listen(listen_socket_, 512);
    return port;
  }
  if (!http_->bind_to_port(options_.host, options_.port))
    fail("cannot listen on ", options_.host, ":", options_.port, " (in use, or the address is not local?)");
  if (listen_socket_ >= 0) ::listen(listen_socket_, 512);
  return options_.port;
}

void HttpServer::run() { http_->listen_after_bind(); }

void HttpServer::stop() { http_->stop(); }

void HttpServer::count_status(int status) {
  std::lock_guard lock(status_mutex_);
  ++responses_by_status_[status];
}

std::string HttpServer::metrics_text() const {
  const auto& st = scheduler_.stats();
  std::ostringstream out;
  out << "# HELP rayo_requests_total HTTP responses by status code.\n# TYPE rayo_requests_total counter\n";
  {
    std::lock_guard lock(status_mutex_);
    for (const auto& [status, n] : responses_by_status_) out << "rayo_requests_total{status=\"" << status << "\"} " << n << "\n";
  }
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " counter\n" << name << " " << v << "\n";
  };
  auto gauge = [&](const char* name, const char* help, int64_t v) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n" << name << " " << v << "\n";
  };
  counter("rayo_prompt_tokens_total", "Prompt tokens of admitted requests, evaluated or reused.",
          st.prompt_tokens.load());
  counter("rayo_prompt_tokens_cached_total", "Prompt tokens reused from the prefix cache, not evaluated.",
          st.prompt_tokens_cached.load());
  counter("rayo_generated_tokens_total", "Tokens generated.", st.generated_tokens.load());
  counter("rayo_requests_finished_total", "Generations that ran to a stop or length.", st.finished.load());
  counter("rayo_requests_cancelled_total", "Generations cancelled (client gone).", st.cancelled.load());
  counter("rayo_requests_rejected_total", "Generations refused because the queue was full.", st.rejected.load());
  counter("rayo_preemptions_total", "Sequences that gave their KV cache blocks up, to be recomputed.",
          st.preemptions.load());
  counter("rayo_recomputed_tokens_total", "Positions evaluated again after a preemption.",
          st.recomputed_tokens.load());
  counter("rayo_batch_steps_total", "Batched graph steps run.", st.steps.load());
  counter("rayo_batch_step_tokens_total", "Token rows over all steps.", st.step_tokens.load());
  gauge("rayo_queue_length", "Requests waiting for admission.", st.waiting.load());
  gauge("rayo_running_sequences", "Sequences in the running batch.", st.running.load());
  gauge("rayo_streams_open", "Streaming responses being written.", streams_open_.load());
  gauge("rayo_kv_cache_blocks_used", "KV cache blocks held by sequences.", st.blocks_used.load());
  gauge("rayo_kv_cache_blocks_cached", "KV cache blocks held by nobody that keep a prompt prefix for reuse.",
        st.blocks_cached.load());
  gauge("rayo_kv_cache_blocks_total", "KV cache blocks in the pool.", st.blocks_total);
  histogram(out, "rayo_time_to_first_token_seconds", "Time from arrival to the first generated token.",
            st.time_to_first_token);
  histogram(out, "rayo_inter_token_latency_seconds", "Time between consecutive tokens of a sequence.",
            st.inter_token_latency);
  histogram(out, "rayo_step_schedule_seconds",
            "Per batched step: choosing its tokens and building its inputs on the host.", st.step_schedule);
  histogram(out, "rayo_step_compute_seconds",
            "Per batched step: the graph on the backend, from the upload to its results on the host.",
            st.step_compute);
  histogram(out, "rayo_step_deliver_seconds",
            "Per batched step: sampling what the backend left to the host and handing tokens to the streams.",
            st.step_deliver);
  return out.str();
}

}  // namespace rayo::server
