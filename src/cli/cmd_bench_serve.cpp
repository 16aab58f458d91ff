// rayo bench-serve: a load generator for OpenAI-compatible servers. N clients
// stream completions concurrently (each sends its next request as soon as the
// last one ends) for a bounded number of requests; reported per N: aggregate
// output tokens/s, time to first token and inter-token latency (p50, p99).
// It targets a running server (--url) or starts `rayo serve` on a free port
// (-m MODEL), so rayo and other servers can be measured with one tool.
// --passes K runs the list of client counts K times over, interleaved, and
// gives each ratio against the first count of the same pass: on a shared
// machine whose speed drifts by tens of percent from minute to minute, only
// ratios measured side by side mean something, and their median over passes.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "cli/command.h"
#include "common/error.h"
#include "common/strings.h"
#include "tools/serve_process.h"
#include "tools/sse_client.h"

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
  int passes = 1;  // times over the list of client counts
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

// A rayo server's per-step figures over a round, from its /metrics before and
// after (absent for a server without them).
struct StepFigures {
  bool known = false;
  double steps = 0, tokens = 0;                    // batched steps, token rows over them
  double schedule_ms = 0, compute_ms = 0, deliver_ms = 0;  // mean per step
};

struct Round {
  int pass = 0, clients = 0;
  int64_t requests = 0, failures = 0, output_tokens = 0;
  double seconds = 0;
  std::vector<double> ttft, itl;
  StepFigures steps;
};

// The unlabelled samples of a Prometheus text page ("name value" lines).
std::map<std::string, double> scrape_metrics(const tools::ServerAddress& ep) {
  std::map<std::string, double> out;
  const auto r = tools::http_get(ep, "/metrics", 30);
  if (r.status != 200) return out;
  std::istringstream lines(r.body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#' || line.find('{') != std::string::npos) continue;
    std::istringstream fields(line);
    std::string name;
    double value;
    if (fields >> name >> value) out[name] = value;
  }
  return out;
}

StepFigures step_figures(const std::map<std::string, double>& before, const std::map<std::string, double>& after) {
  auto delta = [&](const std::string& name) {
    const auto a = after.find(name), b = before.find(name);
    return a == after.end() ? NAN : a->second - (b == before.end() ? 0.0 : b->second);
  };
  StepFigures f;
  f.steps = delta("rayo_batch_steps_total");
  if (!(f.steps > 0)) return f;
  f.known = true;
  f.tokens = delta("rayo_batch_step_tokens_total");
  f.schedule_ms = 1e3 * delta("rayo_step_schedule_seconds_sum") / f.steps;
  f.compute_ms = 1e3 * delta("rayo_step_compute_seconds_sum") / f.steps;
  f.deliver_ms = 1e3 * delta("rayo_step_deliver_seconds_sum") / f.steps;
  return f;
}

// `seed` makes this round's prompts differ from every other round's, so that
// no round finds another's prompts in the server's prefix cache.
Round run_round(const tools::ServerAddress& ep, const BenchServeOptions& o, int n_clients, int n_vocab,
                const std::string& model_name, uint32_t seed) {
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
    std::mt19937 rng(seed * 1000003u + static_cast<uint32_t>(1234 + index));
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
      auto res = tools::post_stream(ep, "/v1/completions", body.dump(), [&](const std::string& data) {
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
std::unique_ptr<tools::ServeProcess> start_server(const BenchServeOptions& o) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) fail("cannot find the rayo executable");
  exe[n] = 0;
  std::vector<std::string> args = {"-m", o.model};
  std::istringstream extra(o.serve_args);
  for (std::string a; extra >> a;) args.push_back(a);
  // Loading repacks every weight: minutes for the largest models on a small machine.
  auto process = std::make_unique<tools::ServeProcess>(exe, args, 1800);
  if (!process->ok()) fail("rayo serve did not start");
  return process;
}

// A round's figures, and its ratios to the first round of its pass (NAN where
// the base measured nothing: no inter-token gap in one-chunk answers).
struct RoundFigures {
  double tps, ttft50, ttft99, itl50, itl99, tps_ratio, itl99_ratio;
};

RoundFigures figures(const Round& r, const Round& base) {
  RoundFigures f{};
  f.tps = r.output_tokens / r.seconds;
  f.ttft50 = percentile(r.ttft, 50) * 1e3, f.ttft99 = percentile(r.ttft, 99) * 1e3;
  f.itl50 = percentile(r.itl, 50) * 1e3, f.itl99 = percentile(r.itl, 99) * 1e3;
  const double base_tps = base.output_tokens / base.seconds, base_itl99 = percentile(base.itl, 99) * 1e3;
  f.tps_ratio = base_tps > 0 ? f.tps / base_tps : NAN;
  f.itl99_ratio = base_itl99 > 0 ? f.itl99 / base_itl99 : NAN;
  return f;
}

std::string ratio_text(double v) {
  char buf[32] = "-";
  if (std::isfinite(v)) std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// "median (min-max)" of the finite values, or "-".
std::string spread_text(std::vector<double> v) {
  std::erase_if(v, [](double x) { return !std::isfinite(x); });
  if (v.empty()) return "-";
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f (%.2f-%.2f)", percentile(v, 50), *lo, *hi);
  return buf;
}

void print_rounds(const BenchServeOptions& o, const std::vector<Round>& rounds) {
  const size_t per_pass = o.clients.size();
  const int base_clients = o.clients[0];
  json all = json::array();
  if (!o.json_out) {
    std::printf("| pass | clients | requests | failed | output tok/s | x N=%d | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | ITL p99 / N=%d |\n",
                base_clients, base_clients);
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  }
  std::vector<RoundFigures> figs;
  for (size_t i = 0; i < rounds.size(); ++i) figs.push_back(figures(rounds[i], rounds[i - i % per_pass]));
  for (size_t i = 0; i < rounds.size(); ++i) {
    const Round& r = rounds[i];
    const RoundFigures& f = figs[i];
    if (o.json_out)
      all.push_back({{"pass", r.pass + 1}, {"clients", r.clients}, {"requests", r.requests}, {"failures", r.failures},
                     {"output_tokens", r.output_tokens}, {"seconds", r.seconds}, {"output_tokens_per_second", f.tps},
                     {"ttft_p50_ms", f.ttft50}, {"ttft_p99_ms", f.ttft99}, {"itl_p50_ms", f.itl50},
                     {"itl_p99_ms", f.itl99}, {"output_tokens_per_second_ratio", f.tps_ratio},
                     {"itl_p99_ratio", std::isfinite(f.itl99_ratio) ? json(f.itl99_ratio) : json()}});
    if (o.json_out && r.steps.known)
      all.back()["server_steps"] = {{"steps", r.steps.steps}, {"tokens_per_step", r.steps.tokens / r.steps.steps},
                                    {"schedule_ms", r.steps.schedule_ms}, {"compute_ms", r.steps.compute_ms},
                                    {"deliver_ms", r.steps.deliver_ms}};
    else
      std::printf("| %d | %d | %lld | %lld | %.1f | %s | %.1f | %.1f | %.1f | %.1f | %s |\n", r.pass + 1, r.clients,
                  static_cast<long long>(r.requests), static_cast<long long>(r.failures), f.tps,
                  ratio_text(f.tps_ratio).c_str(), f.ttft50, f.ttft99, f.itl50, f.itl99,
                  ratio_text(f.itl99_ratio).c_str());
  }
  if (o.json_out) {
    std::printf("%s\n", all.dump(2).c_str());
    return;
  }
  // The server's own view of its steps (a rayo server: its /metrics).
  if (std::any_of(rounds.begin(), rounds.end(), [](const Round& r) { return r.steps.known; })) {
    std::printf("\nthe server's batched steps per round (from its /metrics; mean per step):\n\n");
    std::printf("| pass | clients | steps | tokens / step | schedule ms | compute ms | deliver ms |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (const Round& r : rounds)
      if (r.steps.known)
        std::printf("| %d | %d | %.0f | %.1f | %.3f | %.3f | %.3f |\n", r.pass + 1, r.clients, r.steps.steps,
                    r.steps.tokens / r.steps.steps, r.steps.schedule_ms, r.steps.compute_ms, r.steps.deliver_ms);
  }
  if (o.passes < 2) return;
  std::printf("\nmedian (range) over %d passes of each pass's ratios to its N=%d round:\n\n", o.passes, base_clients);
  std::printf("| clients | output tok/s x N=%d | ITL p99 / N=%d |\n|---|---|---|\n", base_clients, base_clients);
  for (size_t c = 0; c < per_pass; ++c) {
    std::vector<double> tps, itl;
    for (size_t i = c; i < rounds.size(); i += per_pass) {
      tps.push_back(figs[i].tps_ratio);
      itl.push_back(figs[i].itl99_ratio);
    }
    std::printf("| %d | %s | %s |\n", o.clients[c], spread_text(tps).c_str(), spread_text(itl).c_str());
  }
}

void bench(const BenchServeOptions& o) {
  if (o.url.empty() == o.model.empty()) fail("give --url URL (a running server) or -m MODEL (start one)");
  if (o.shared_prefix_tokens < 0) fail("--shared-prefix-tokens must not be negative");
  if (o.requests_per_client < 1 || o.max_tokens < 1 || o.prompt_tokens < 1 || o.passes < 1)
    fail("--requests, --max-tokens, --prompt-tokens and --passes must be positive");
  if (o.clients.empty()) fail("give at least one client count (-N)");
  for (int n : o.clients)
    if (n < 1) fail("client counts must be positive, got ", n);
  std::unique_ptr<tools::ServeProcess> process;  // stopped when bench returns
  if (o.url.empty()) process = start_server(o);
  tools::ServerAddress ep = process ? process->address() : tools::parse_url(o.url);
  ep.api_key = o.api_key;

  auto models = tools::http_get(ep, "/v1/models", 30);
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
  for (int pass = 0; pass < o.passes; ++pass)
    for (int n : o.clients) {
      if (o.passes > 1 && !o.json_out) std::fprintf(stderr, "bench-serve: pass %d of %d, %d clients\n", pass + 1, o.passes, n);
      const auto before = scrape_metrics(ep);
      rounds.push_back(run_round(ep, o, n, n_vocab, model_name, static_cast<uint32_t>(rounds.size())));
      rounds.back().pass = pass;
      rounds.back().steps = step_figures(before, scrape_metrics(ep));
    }
  print_rounds(o, rounds);
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
  cmd->add_option("--passes", o->passes,
                  "times over the client counts, interleaved; ratios are to the same pass's first count, "
                  "and their medians are printed")
      ->capture_default_str();
  cmd->add_option("--api-key", o->api_key, "bearer token for the server");
  cmd->add_flag("--json", o->json_out, "print JSON instead of a table");
  cmd->callback([o] { bench(*o); });
}

}  // namespace

RAYO_COMMAND(bench_serve, 41, setup);

}  // namespace rayo::cli
