#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <initializer_list>
#include <sstream>

#include "common/error.h"
#include "common/strings.h"
#include "server/audio_handlers.h"
#include "server/openai_api.h"
#include "server/request_handlers.h"

namespace rayo::server {
namespace {

void histogram(std::ostringstream& out, const std::string& name, const std::string& help,
               const runtime::LatencyHistogram& h) {
  const auto s = h.snapshot();
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
  for (size_t i = 0; i < s.bounds.size(); ++i) out << name << "_bucket{le=\"" << s.bounds[i] << "\"} " << s.cumulative[i] << "\n";
  out << name << "_bucket{le=\"+Inf\"} " << s.count << "\n";
  out << name << "_sum " << s.sum << "\n" << name << "_count " << s.count << "\n";
}

}  // namespace

HttpServer::HttpServer(runtime::Scheduler* scheduler, whisper::Transcriber* transcriber, ServerOptions options)
    : scheduler_(scheduler), options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  RAYO_CHECK(scheduler || transcriber, "a server needs a language model or a Whisper model");
  if (scheduler_) handlers_ = std::make_unique<RequestHandlers>(*scheduler_, options_.model_name);
  if (transcriber) audio_ = std::make_unique<AudioHandlers>(*transcriber, options_.audio);
  configure_connections();
  count_responses();
  answer_errors_as_json();
  if (!options_.api_key.empty()) require_api_key();
  add_routes();
}

void HttpServer::configure_connections() {
  auto& svr = *http_;
  // Enough threads for every request that may be running or waiting, and a few to refuse the rest.
  int64_t requests = 0;
  if (scheduler_) requests += scheduler_->options().max_seqs + scheduler_->options().max_queue;
  if (audio_) requests += 1 + options_.audio.max_queue;
  const int threads =
      options_.http_threads > 0 ? options_.http_threads : static_cast<int>(std::max<int64_t>(16, 2 * requests + 8));
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
}

// Every response, routed or not, counts in /metrics' rayo_requests_total.
void HttpServer::count_responses() {
  http_->set_logger([this](const httplib::Request&, const httplib::Response& res) { count_status(res.status); });
}

// httplib's own answers (no route, body too large) and a handler's uncaught
// exception are OpenAI's error JSON too, like every other error.
void HttpServer::answer_errors_as_json() {
  http_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404)
      send_json(res, 404, ApiError(404, cat("no route ", req.method, " ", req.path), "", "not_found").body());
    else if (res.status == 413)
      send_json(res, 413, ApiError(413, "the request body is too large", "", "request_too_large").body());
    else
      send_json(res, res.status, ApiError(res.status, cat("HTTP error ", res.status)).body());
  });
  http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_json(res, 500, ApiError(500, what, "", "internal_error", "server_error").body());
  });
}

void HttpServer::require_api_key() {
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
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

namespace {
// The answer of a route whose model this server does not hold.
httplib::Server::Handler not_loaded(std::string what) {
  return [what](const httplib::Request& req, httplib::Response& res) {
    send_error(res, ApiError(404, cat(req.path, ": this server has no ", what), "", "model_not_loaded"));
  };
}

// A POST route: its path and the method of Handlers that answers it.
template <typename Handlers>
struct Route {
  const char* path;
  void (Handlers::*method)(const httplib::Request&, httplib::Response&);
};

// The routes of one model: answered by `handlers`, or, when the model is not
// loaded (null), with a 404 naming what is missing.
template <typename Handlers>
void add_post_routes(httplib::Server& svr, Handlers* handlers, std::initializer_list<Route<Handlers>> routes,
                     const std::string& missing) {
  for (const auto& r : routes) {
    if (!handlers)
      svr.Post(r.path, not_loaded(missing));
    else
      svr.Post(r.path, [handlers, method = r.method](const httplib::Request& req, httplib::Response& res) {
        (handlers->*method)(req, res);
      });
  }
}
}  // namespace

void HttpServer::add_routes() {
  auto& svr = *http_;
  svr.Get("/health", [](const httplib::Request&, httplib::Response& res) { send_json(res, 200, {{"status", "ok"}}); });
  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_text(), "text/plain; version=0.0.4");
  });
  auto models = [this](const httplib::Request&, httplib::Response& res) {
    json data = json::array();
    if (handlers_) data.push_back(handlers_->model_entry());
    if (audio_) data.push_back(audio_->model_entry());
    send_json(res, 200, {{"object", "list"}, {"data", std::move(data)}});
  };
  svr.Get("/v1/models", models);
  svr.Get("/models", models);
  add_post_routes<RequestHandlers>(svr, handlers_.get(),
                                   {{"/v1/chat/completions", &RequestHandlers::chat},
                                    {"/chat/completions", &RequestHandlers::chat},
                                    {"/v1/completions", &RequestHandlers::completion},
                                    {"/completions", &RequestHandlers::completion}},
                                   "language model (start rayo serve with -m MODEL.gguf)");
  add_post_routes<AudioHandlers>(svr, audio_.get(),
                                 {{"/v1/audio/transcriptions", &AudioHandlers::transcriptions},
                                  {"/audio/transcriptions", &AudioHandlers::transcriptions},
                                  {"/v1/audio/translations", &AudioHandlers::translations},
                                  {"/audio/translations", &AudioHandlers::translations}},
                                 "Whisper model (start rayo serve with --whisper FOLDER)");
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

int64_t HttpServer::streams_open() const { return handlers_ ? handlers_->streams_open() : 0; }

int64_t HttpServer::audio_in_flight() const { return audio_ ? audio_->in_flight() : 0; }

void HttpServer::count_status(int status) {
  std::lock_guard lock(status_mutex_);
  ++responses_by_status_[status];
}

std::string HttpServer::metrics_text() const {
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
  if (audio_) {
    gauge("rayo_audio_requests_in_flight", "Transcriptions running or waiting for the Whisper model.",
          audio_->in_flight());
    counter("rayo_audio_requests_finished_total", "Transcriptions answered.", audio_->finished());
    counter("rayo_audio_seconds_total", "Seconds of audio transcribed.",
            static_cast<uint64_t>(audio_->audio_seconds()));
  }
  if (!scheduler_) return out.str();
  const auto& st = scheduler_->stats();
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
  gauge("rayo_streams_open", "Streaming responses being written.", handlers_->streams_open());
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
