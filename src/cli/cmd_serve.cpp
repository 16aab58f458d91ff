// rayo serve: an OpenAI-compatible HTTP server with continuous batching.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli/command.h"
#include "cli/options.h"
#include "common/error.h"
#include "runtime/scheduler.h"
#include "server/audio_api.h"
#include "server/http_server.h"
#include "whisper/transcriber.h"
#include "whisper/weight_store.h"

namespace rayo::cli {
namespace {

struct ServeOptions {
  ModelOptions model;
  std::string host = "127.0.0.1";
  int port = 8080;
  int64_t parallel = 4;
  int64_t prefill_chunk = 128;
  int64_t max_queue = 64;
  int64_t kv_blocks = 0;
  double kv_fraction = 0;
  bool no_prefix_cache = false;
  bool batch_invariant = false;
  std::string api_key;
  std::string alias;
  size_t max_body = 25u << 20;
  double shutdown_timeout = 10;
  std::string whisper;                 // --whisper FOLDER
  int whisper_beam_size = 5;
  std::string whisper_compute_type = "default";
};

// The language model's scheduler, or none without -m.
std::unique_ptr<runtime::Scheduler> start_scheduler(const ServeOptions& o) {
  if (o.model.model.empty()) return nullptr;
  auto model = load_model(o.model);
  const auto session = session_options(o.model, *model);
  runtime::SchedulerOptions so;
  so.max_seqs = o.parallel;
  so.max_seq_len = session.n_ctx > 0 ? session.n_ctx : 4096;
  so.prefill_chunk = o.prefill_chunk;
  so.max_queue = o.max_queue;
  so.n_blocks = o.kv_blocks;
  so.kv_fraction = o.kv_fraction;
  so.prefix_cache = !o.no_prefix_cache;
  so.batch_invariant = o.batch_invariant;
  so.backend = session.backend;
  return std::make_unique<runtime::Scheduler>(model, so);
}

// The Whisper model, or none without --whisper. It runs on the CPU, with -t
// threads (Whisper's CUDA path has not yet been measured on a GPU: `rayo
// transcribe --device cuda` asks for it).
std::unique_ptr<whisper::Transcriber> load_transcriber(const ServeOptions& o) {
  if (o.whisper.empty()) return nullptr;
  if (o.whisper_beam_size < 1 || o.whisper_beam_size > 16)
    fail("--whisper-beam-size must be 1 to 16, got ", o.whisper_beam_size);
  whisper::GraphRunnerOptions ro;
  ro.backend.device = "cpu";
  ro.backend.n_threads = o.model.threads;
  ro.max_sequences = std::max(o.whisper_beam_size, server::kAudioBestOf);
  ro.weights = whisper::weight_format(o.whisper_compute_type);
  return std::make_unique<whisper::Transcriber>(o.whisper, ro);
}

std::string served_name(const std::string& path) {
  std::filesystem::path p(path);
  if (!p.has_filename()) p = p.parent_path();  // a folder given as "dir/"
  return p.filename().string();
}

void serve(const ServeOptions& o) {
  if (o.model.model.empty() && o.whisper.empty())
    fail("nothing to serve: give a language model (-m MODEL.gguf), a Whisper model (--whisper FOLDER), or both");
  if (o.parallel < 1) fail("--parallel must be at least 1, got ", o.parallel);
  if (o.shutdown_timeout < 0) fail("--shutdown-timeout must not be negative");
  // SIGINT/SIGTERM are taken by one thread (sigwait), so every other thread
  // started from here on has them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const std::unique_ptr<runtime::Scheduler> scheduler = start_scheduler(o);
  const std::unique_ptr<whisper::Transcriber> transcriber = load_transcriber(o);

  server::ServerOptions sv;
  sv.host = o.host;
  sv.port = o.port;
  sv.api_key = o.api_key;
  sv.model_name = o.alias.empty() ? served_name(o.model.model) : o.alias;
  sv.max_body_bytes = o.max_body;
  sv.audio.model_name = served_name(o.whisper);
  sv.audio.beam_size = o.whisper_beam_size;
  sv.audio.max_queue = o.max_queue;
  server::HttpServer http(scheduler.get(), transcriber.get(), sv);
  const int port = http.bind();
  auto in_flight = [&] {
    return (scheduler ? scheduler->in_flight() : 0) + (transcriber ? http.audio_in_flight() : 0);
  };

  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::fprintf(stderr, "rayo serve: %s received, finishing %lld requests in flight\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", static_cast<long long>(in_flight()));
    // New requests get 503 from now on; streams in flight run to their end
    // (bounded by --shutdown-timeout) before the listener closes, because
    // closing it also ends the responses still being written.
    if (scheduler) scheduler->drain();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.shutdown_timeout);
    auto busy = [&] { return in_flight() > 0 || http.streams_open() > 0; };
    while (busy() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (scheduler) scheduler->stop();  // cancels whatever is left; its clients get an error event
    const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (http.streams_open() > 0 && std::chrono::steady_clock::now() < grace)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    http.stop();
  });

  if (scheduler) {
    const auto& so = scheduler->options();
    std::fprintf(stderr, "rayo serve: %s on http://%s:%d (%lld sequences of %lld tokens, %lld KV blocks, buckets",
                 sv.model_name.c_str(), o.host.c_str(), port, static_cast<long long>(so.max_seqs),
                 static_cast<long long>(so.max_seq_len), static_cast<long long>(scheduler->stats().blocks_total));
    for (int64_t b : scheduler->buckets()) std::fprintf(stderr, " %lld", static_cast<long long>(b));
    std::fprintf(stderr, "; on the %s%s)\n", std::string(scheduler->device()).c_str(),
                 so.batch_invariant ? ", batch-invariant" : "");
  }
  if (transcriber)
    std::fprintf(stderr,
                 "rayo serve: Whisper %s on http://%s:%d/v1/audio/transcriptions and translations (beam size %d, "
                 "%s weights, on the CPU with %d threads)\n",
                 sv.audio.model_name.c_str(), o.host.c_str(), port, o.whisper_beam_size,
                 o.whisper_compute_type.c_str(), transcriber->n_threads());
  std::printf("listening on http://%s:%d\n", o.host.c_str(), port);
  std::fflush(stdout);
  http.run();
  signal_thread.join();
  std::fprintf(stderr, "rayo serve: stopped\n");
}

void setup(CLI::App& root) {
  auto o = std::make_shared<ServeOptions>();
  auto* cmd = root.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  add_model_options(cmd, o->model, /*model_required=*/false);
  cmd->add_option("--whisper", o->whisper,
                  "Whisper model (a CTranslate2 folder or a whisper.cpp ggml-*.bin file) to answer "
                  "/v1/audio/transcriptions and translations, "
                  "with or without -m");
  cmd->add_option("--whisper-beam-size", o->whisper_beam_size, "beams of each transcription (1: greedy)")
      ->capture_default_str();
  cmd->add_option("--whisper-compute-type", o->whisper_compute_type,
                  "default (Whisper weights as stored) or int8 (quantized at load: faster)")
      ->capture_default_str();
  cmd->add_option("--host", o->host, "address to listen on (loopback by default)")->capture_default_str();
  cmd->add_option("--port", o->port, "TCP port (0: any free port, printed on stdout)")->capture_default_str();
  cmd->add_option("--parallel,--n-parallel", o->parallel, "sequences decoded together")->capture_default_str();
  cmd->add_option("--prefill-chunk", o->prefill_chunk, "prompt tokens per batched step")->capture_default_str();
  cmd->add_option("--max-queue", o->max_queue,
                  "requests that may wait for a free sequence (or for the Whisper model) before 503")
      ->capture_default_str();
  cmd->add_option("--kv-blocks", o->kv_blocks, "KV cache blocks of 16 positions (0: --parallel full contexts)")
      ->capture_default_str();
  cmd->add_option("--kv-fraction", o->kv_fraction,
                  "share of the GPU's memory this server may hold: the KV cache gets what the weights and "
                  "buffers leave of it (as vLLM's gpu_memory_utilization; 0: size it by --kv-blocks)")
      ->capture_default_str();
  cmd->add_flag("--no-prefix-cache", o->no_prefix_cache,
                "evaluate every prompt in full (default: reuse the cached blocks of prompt prefixes seen before)");
  cmd->add_flag("--batch-invariant", o->batch_invariant,
                "on the GPU, compute every sequence's rows alike whatever it is batched with, so that its tokens do "
                "not depend on the other requests (matmuls on exact int8 tensor-core GEMMs, attention as in decode "
                "steps: slower long prompts); the CPU always does");
  cmd->add_option("--api-key", o->api_key, "require 'Authorization: Bearer KEY' on every endpoint but /health");
  cmd->add_option("-a,--alias", o->alias, "model name in responses (default: the file name)");
  cmd->add_option("--max-body-bytes", o->max_body, "largest request body accepted (an audio upload included)")
      ->capture_default_str();
  cmd->add_option("--shutdown-timeout", o->shutdown_timeout,
                  "seconds in-flight requests may take to finish after SIGINT/SIGTERM")
      ->capture_default_str();
  cmd->callback([o] { serve(*o); });
}

}  // namespace

RAYO_COMMAND(serve, 40, setup);

}  // namespace rayo::cli
