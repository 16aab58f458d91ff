// rayo bench-serve: a load generator for OpenAI-compatible servers. N clients
// stream completions concurrently (each sends its next request as soon as the
// last one ends) for a bounded number of requests; reported per N: aggregate
// output tokens/s, time to first token and inter-token latency (p50, p99).
// It targets a running server (--url) or starts `rayo serve` on a free port
// (-m MODEL), so rayo and other servers can be measured with one tool.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "cli/command.h"
#include "common/error.h"
#include "common/strings.h"
#include "server/serve_process.h"
#include "server/sse_client.h"

namespace rayo::cli {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct BenchServeOptions {
  std::string url;
  std::string model;  // start `rayo serve -m MODEL` when no --url
  std::vector<int> clients = {1, 4, 16, 32};
  int requests_per_client = 4;
  int max_tokens = 64;
  int prompt_tokens = 32;
  int shared_prefix_tokens = 0;  // the same leading tokens in every prompt (a common system prompt)
  std::string serve_args;  // extra flags for the started server
  std::string api_key;
  bool json_out = false;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double idx = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(idx)), hi = static_cast<size_t>(std::ceil(idx));
  return v[lo] + (v[hi] - v[lo]) * (idx - static_cast<double>(lo));
}

struct Round {
  int clients = 0;
  int64_t requests = 0, failures = 0, output_tokens = 0;
  double seconds = 0;
  std::vector<double> ttft, itl;
};

Round run_round(const server::ServerAddress& ep, const BenchServeOptions& o, int n_clients, int n_vocab,
                const std::string& model_name) {
  Round round;
  round.clients = n_clients;
  std::mutex mutex;
  // Prompts of random token ids (from 3 up: past the usual special tokens)
  // keep the load independent of the tokenizer.
  std::uniform_int_distribution<int> id(3, std::max(3, n_vocab - 1));
  std::vector<int> shared_prefix;
  std::mt19937 prefix_rng(99);
  for (int i = 0; i < o.shared_prefix_tokens; ++i) shared_prefix.push_back(id(prefix_rng));
  auto client = [&](int index) {
    std::mt19937 rng(static_cast<uint32_t>(1234 + index));
    auto token = id;  // each thread its own distribution object
    for (int r = 0; r < o.requests_per_client; ++r) {
      std::vector<int> prompt = shared_prefix;
      for (int i = 0; i < o.prompt_tokens; ++i) prompt.push_back(token(rng));
      json body = {{"model", model_name},    {"prompt", prompt},       {"max_tokens", o.max_tokens},
                   {"stream", true},         {"ignore_eos", true},     {"temperature", 0.8},
                   {"seed", index * 100 + r}, {"logprobs", 0},
                   {"stream_options", {{"include_usage", true}}}};
      const auto start = Clock::now();
      auto last = start;
      bool first = true;
      int64_t tokens = 0;
      std::vector<double> itl;
      double ttft = NAN;
      auto res = server::post_stream(ep, "/v1/completions", body.dump(), [&](const std::string& data) {
        if (data == "[DONE]") return true;
        json chunk = json::parse(data, nullptr, false);
        if (chunk.is_discarded() || !chunk.contains("choices") || chunk["choices"].empty()) return true;
        const json& lp = chunk["choices"][0]["logprobs"];
        int64_t k = lp.is_object() && lp.contains("tokens") ? static_cast<int64_t>(lp["tokens"].size()) : 0;
        if (!lp.is_object()) {  // a server without streamed logprobs: one token per non-empty chunk
          const json& text = chunk["choices"][0]["text"];
          k = text.is_string() && !text.get<std::string>().empty() ? 1 : 0;
        }
        if (k == 0) return true;
        const auto now = Clock::now();
        const double gap = std::chrono::duration<double>(now - last).count();
        if (first) {
          ttft = gap;
          first = false;
          for (int64_t i = 1; i < k; ++i) itl.push_back(0);
        } else {
          for (int64_t i = 0; i < k; ++i) itl.push_back(gap / static_cast<double>(k));
        }
        last = now;
        tokens += k;
        return true;
      });
      std::lock_guard lock(mutex);
      ++round.requests;
      if (res.status != 200 || tokens == 0) {
        if (round.failures++ == 0)
          std::fprintf(stderr, "bench-serve: a request failed: %s\n",
                       res.status ? (std::to_string(res.status) + " " + res.body.substr(0, 200)).c_str()
                                  : res.error.c_str());
        continue;
      }
      round.output_tokens += tokens;
      round.ttft.push_back(ttft);
      round.itl.insert(round.itl.end(), itl.begin(), itl.end());
    }
  };
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < n_clients; ++i) threads.emplace_back(client, i);
  for (auto& t : threads) t.join();
  round.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return round;
}

// `rayo serve -m MODEL` on a free port, from this same executable.
std::unique_ptr<server::ServeProcess> start_server(const BenchServeOptions& o) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) fail("cannot find the rayo executable");
  exe[n] = 0;
  std::vector<std::string> args = {"-m", o.model};
  std::istringstream extra(o.serve_args);
  for (std::string a; extra >> a;) args.push_back(a);
  // Loading repacks every weight: minutes for the largest models on a small machine.
  auto process = std::make_unique<server::ServeProcess>(exe, args, 1800);
  if (!process->ok()) fail("rayo serve did not start");
  return process;
}

void bench(const BenchServeOptions& o) {
  if (o.url.empty() == o.model.empty()) fail("give --url URL (a running server) or -m MODEL (start one)");
  if (o.shared_prefix_tokens < 0) fail("--shared-prefix-tokens must not be negative");
  if (o.requests_per_client < 1 || o.max_tokens < 1 || o.prompt_tokens < 1)
    fail("--requests, --max-tokens and --prompt-tokens must be positive");
  std::unique_ptr<server::ServeProcess> process;  // stopped when bench returns
  if (o.url.empty()) process = start_server(o);
  server::ServerAddress ep = process ? process->address() : server::parse_url(o.url);
  ep.api_key = o.api_key;

  auto models = server::http_get(ep, "/v1/models", 30);
  if (models.status != 200) fail("GET /v1/models failed: ", models.status ? std::to_string(models.status) : models.error);
  json m = json::parse(models.body, nullptr, false);
  std::string model_name = "model";
  int n_vocab = 256;
  if (!m.is_discarded() && m.contains("data") && !m["data"].empty()) {
    model_name = m["data"][0].value("id", model_name);
    const json& meta = m["data"][0].contains("meta") ? m["data"][0]["meta"] : json();
    if (meta.is_object() && meta.contains("n_vocab") && meta["n_vocab"].is_number_integer())
      n_vocab = meta["n_vocab"].get<int>();
  }
  std::vector<Round> rounds;
  for (int n : o.clients) {
    if (n < 1) fail("client counts must be positive");
    rounds.push_back(run_round(ep, o, n, n_vocab, model_name));
  }
  const double base = rounds.empty() ? 0 : rounds[0].output_tokens / rounds[0].seconds;
  const double base_itl = rounds.empty() ? 0 : percentile(rounds[0].itl, 99);
  // No ratio when the first round measured no inter-token gap (one-chunk answers).
  auto itl_ratio = [&](double i99_ms) {
    char buf[32] = "-";
    if (base_itl > 0) std::snprintf(buf, sizeof buf, "%.2f", i99_ms / (base_itl * 1e3));
    return std::string(buf);
  };
  json all = json::array();
  if (!o.json_out) {
    std::printf("| clients | requests | failed | output tok/s | x N=%d | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | ITL p99 / N=%d |\n",
                rounds.empty() ? 0 : rounds[0].clients, rounds.empty() ? 0 : rounds[0].clients);
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  }
  for (const auto& r : rounds) {
    const double tps = r.output_tokens / r.seconds;
    const double t50 = percentile(r.ttft, 50) * 1e3, t99 = percentile(r.ttft, 99) * 1e3;
    const double i50 = percentile(r.itl, 50) * 1e3, i99 = percentile(r.itl, 99) * 1e3;
    if (o.json_out)
      all.push_back({{"clients", r.clients}, {"requests", r.requests}, {"failures", r.failures},
                     {"output_tokens", r.output_tokens}, {"seconds", r.seconds}, {"output_tokens_per_second", tps},
                     {"ttft_p50_ms", t50}, {"ttft_p99_ms", t99}, {"itl_p50_ms", i50}, {"itl_p99_ms", i99}});
    else
      std::printf("| %d | %lld | %lld | %.1f | %.2f | %.1f | %.1f | %.1f | %.1f | %s |\n", r.clients,
                  static_cast<long long>(r.requests), static_cast<long long>(r.failures), tps, tps / base, t50, t99,
                  i50, i99, itl_ratio(i99).c_str());
  }
  if (o.json_out) std::printf("%s\n", all.dump(2).c_str());
  for (const auto& r : rounds)
    if (r.failures) throw ExitCode{1};
}

void setup(CLI::App& root) {
  auto o = std::make_shared<BenchServeOptions>();
  auto* cmd = root.add_subcommand("bench-serve", "Load-test an OpenAI-compatible server with concurrent streaming clients");
  cmd->add_option("--url", o->url, "server to test, e.g. http://127.0.0.1:8080");
  cmd->add_option("-m,--model", o->model, "start `rayo serve -m MODEL` on a free port and test it");
  cmd->add_option("--serve-args", o->serve_args, "extra flags for the started server, e.g. \"--parallel 32 -t 2\"");
  cmd->add_option("-N,--clients", o->clients, "concurrent clients per round")->delimiter(',')->capture_default_str();
  cmd->add_option("-r,--requests", o->requests_per_client, "requests per client per round")->capture_default_str();
  cmd->add_option("-n,--max-tokens", o->max_tokens, "tokens generated per request")->capture_default_str();
  cmd->add_option("-p,--prompt-tokens", o->prompt_tokens, "prompt tokens per request")->capture_default_str();
  cmd->add_option("--shared-prefix-tokens", o->shared_prefix_tokens,
                  "tokens every prompt starts with, before its own -p tokens (a common system prompt)")
      ->capture_default_str();
  cmd->add_option("--api-key", o->api_key, "bearer token for the server");
  cmd->add_flag("--json", o->json_out, "print JSON instead of a table");
  cmd->callback([o] { bench(*o); });
}

}  // namespace

RAYO_COMMAND(bench_serve, 41, setup);

}  // namespace rayo::cli
