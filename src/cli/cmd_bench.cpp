// rayo bench: prompt processing (pp) and token generation (tg) throughput, as
// llama-bench measures them: pp = a batch of n_prompt tokens; tg = n_gen
// single-token steps; both from a cache holding `depth` tokens already (-d, 0
// by default: an empty cache; filled once, untimed, and kept between runs);
// after one warm-up run, each test is repeated and reported as mean ± standard
// deviation.
// --json uses llama-bench's field names so tools that read one read the other.
//
// It also measures the memory bandwidth of the device it runs on (CPU: a
// streaming read on the same threads; CUDA: a device-to-device copy) before
// and after the tests, keeps the higher (a shared machine's bandwidth moves
// from minute to minute), and gives tg's fraction of that roofline: the bytes
// of weights and KV cache a decode step reads, times tokens/s, over the
// bandwidth. On CUDA it also prints the kernels a step launches without its
// CUDA graph, and the NVRTC compiles of this start (none when the kernel
// cache has them).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <set>

#include "backends/cuda/cuda_backend.h"
#include "tools/bench_batched.h"
#include "tools/bench_kernels.h"
#include "cli/command.h"
#include "cli/options.h"
#include "cli/whisper_bench.h"
#include "whisper/ggml_whisper_file.h"
#include "common/error.h"
#include "common/strings.h"
#include "tools/synth_model.h"

namespace rayo::cli {
namespace {

struct BenchOptions {
  ModelOptions model;
  std::string synth_preset;
  std::string synth_type = "q4_k_m";
  std::string compute_type = "default";  // Whisper models: default (as stored) or int8
  int n_prompt = 512;
  int n_gen = 128;
  std::vector<int> depths = {0};
  std::vector<int> batches;  // -B: tg of that many sequences decoded together, instead of one
  int reps = 5;
  bool json = false;
  bool kernels = false;  // --kernels: the decode step's matmul kernels alone (bench_kernels.h)
  tools::KernelBenchOptions kernel;
};

struct TestResult {
  std::string name;
  int n_prompt = 0, n_gen = 0, depth = 0;
  std::vector<double> seconds;
  int seqs = 1;  // sequences decoded together (-B): n_gen tokens each
  double tokens() const { return n_prompt + static_cast<double>(n_gen) * seqs; }
  double mean_ts() const {
    double s = 0;
    for (double t : seconds) s += tokens() / t;
    return s / seconds.size();
  }
  double stddev_ts() const {
    if (seconds.size() < 2) return 0;
    const double m = mean_ts();
    double s = 0;
    for (double t : seconds) s += std::pow(tokens() / t - m, 2);
    return std::sqrt(s / (seconds.size() - 1));
  }
};

using Clock = std::chrono::steady_clock;

// Leaves the session holding exactly `depth` tokens of `context` (evaluated once,
// untimed, and kept: positions below depth survive a rewind to depth).
void set_depth(runtime::Session& session, const std::vector<int32_t>& context, int depth) {
  if (session.n_past() < depth) {
    session.rewind(0);
    if (depth > 0) session.eval(std::span<const int32_t>(context).first(depth));
  }
  session.rewind(depth);
}

double time_prompt(runtime::Session& session, const std::vector<int32_t>& context, int depth,
                   const std::vector<int32_t>& tokens) {
  set_depth(session, context, depth);
  const auto start = Clock::now();
  session.eval(tokens);
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Greedy decoding, as `rayo run --temp 0` generates: on a backend that samples,
// each step brings back one id.
double time_generation(runtime::Session& session, const std::vector<int32_t>& context, int depth, int n_gen,
                       int32_t token) {
  set_depth(session, context, depth);
  runtime::SamplingParams greedy;
  greedy.temperature = 0.0f;
  runtime::Sampler sampler(greedy, session.n_vocab());
  const auto start = Clock::now();
  for (int i = 0; i < n_gen; ++i) token = session.eval_sample(std::span<const int32_t>(&token, 1), sampler);
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Bytes of weights a decode step reads: every matrix once.
uint64_t bytes_per_token(runtime::Session& session) {
  const auto& g = session.decode_executor().graph();
  std::set<const void*> seen;
  uint64_t bytes = 0;
  for (const auto& n : g.nodes())
    for (int index : graph::matrix_weights(n)) {
      const auto& w = g.weights()[index];
      if (seen.insert(w.data).second) bytes += rayo::row_bytes(w.type, w.cols) * w.rows;
    }
  return bytes;
}

// Bytes of KV cache the steps of a tg run of n_gen tokens after `depth` read on
// average: each step reads the keys and values of every position so far.
uint64_t kv_bytes_per_token(const runtime::Model& model, graph::KvType type, int n_gen, int depth) {
  const auto& s = model.spec();
  const uint64_t per_position = uint64_t{s.n_layers} * s.n_head_kv * (s.head_dim + s.head_dim_v) *
                                (type == graph::KvType::F16 ? 2 : 4);
  return per_position * (2 * static_cast<uint64_t>(depth) + n_gen + 1) / 2;
}

std::string model_label(const runtime::Model& model) {
  const auto& s = model.spec();
  uint64_t params = 0;
  std::map<std::string, uint64_t> bytes_by_type;
  for (const auto& t : model.file().tensors()) {
    params += t.n_elements;
    if (t.ne.size() >= 2) bytes_by_type[std::string(type_name(t.type))] += t.n_bytes;
  }
  std::string dominant;
  uint64_t most = 0;
  for (const auto& [type, b] : bytes_by_type)
    if (b > most) most = b, dominant = type;
  char size[32];
  if (params >= 1000000000)
    std::snprintf(size, sizeof size, "%.1fB", params / 1e9);
  else
    std::snprintf(size, sizeof size, "%.0fM", params / 1e6);
  return s.arch + " " + size + " " + dominant + (bytes_by_type.size() > 1 ? " (mix)" : "");
}

void run(BenchOptions o) {
  if (o.n_prompt < 0 || o.n_gen < 0) fail("-p and -n must not be negative");
  if (o.n_prompt == 0 && o.n_gen == 0) fail("nothing to measure: -p and -n are both 0");
  if (o.reps < 1) fail("-r must be at least 1, got ", o.reps);
  if (o.depths.empty()) o.depths = {0};
  for (int d : o.depths)
    if (d < 0) fail("-d must not be negative, got ", d);
  const int max_depth = *std::max_element(o.depths.begin(), o.depths.end());
  std::string synth_path;
  if (!o.synth_preset.empty()) {
    if (!o.model.model.empty()) fail("give -m MODEL or --synth PRESET, not both");
    synth_path = (std::filesystem::temp_directory_path() /
                  ("rayo-bench-" + o.synth_preset + "-" + o.synth_type + "-" + std::to_string(getpid()) + ".gguf"))
                     .string();
    const auto config = tools::synth_preset(o.synth_preset);
    const auto ftype = tools::parse_synth_file_type(o.synth_type);
    std::fprintf(stderr, "writing a synthetic %s %s model to %s\n", o.synth_preset.c_str(), o.synth_type.c_str(),
                 synth_path.c_str());
    tools::write_synth_model(config, ftype, 1, synth_path);
    o.model.model = synth_path;
  } else if (o.model.model.empty()) {
    fail("give -m MODEL or --synth PRESET");
  }
  struct RemoveOnExit {
    std::string path;
    ~RemoveOnExit() {
      if (!path.empty()) std::filesystem::remove(path);
    }
  } cleanup{synth_path};

  const auto start = Clock::now();
  auto model = load_model(o.model);
  auto sopts = session_options(o.model, *model);
  sopts.n_ctx = max_depth + std::max<int64_t>({o.n_prompt, o.n_gen, 1});
  if (model->spec().n_ctx_train > 0 && sopts.n_ctx > model->spec().n_ctx_train)
    fail("-d ", max_depth, " plus the test's tokens (", sopts.n_ctx, ") is longer than the model's context of ",
         model->spec().n_ctx_train);
  runtime::Session session(model, sopts);
  session.decode_executor();  // prepared now: weights repacked (CPU) or uploaded and decode kernels compiled (CUDA)
  const double start_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::mt19937 rng(42);
  std::vector<int32_t> prompt(o.n_prompt), context(max_depth);
  for (auto& t : prompt) t = static_cast<int32_t>(rng() % session.n_vocab());
  for (auto& t : context) t = static_cast<int32_t>(rng() % session.n_vocab());
  if (max_depth > 0) std::fprintf(stderr, "filling the context to depth %d...\n", max_depth);

  double bandwidth = o.n_gen > 0 ? session.backend().measure_memory_bandwidth() : 0;
  std::vector<TestResult> results;
  for (int depth : o.depths) {
    const std::string at = depth > 0 ? " @ d" + std::to_string(depth) : "";
    if (o.n_prompt > 0) {
      TestResult r{"pp" + std::to_string(o.n_prompt) + at, o.n_prompt, 0, depth, {}};
      time_prompt(session, context, depth, prompt);  // warm-up
      for (int i = 0; i < o.reps; ++i) r.seconds.push_back(time_prompt(session, context, depth, prompt));
      results.push_back(r);
    }
    if (o.n_gen > 0 && !o.batches.empty()) {
      for (const auto& b : tools::bench_batched_decode(model, sopts.backend, o.batches, o.n_gen, depth, o.reps)) {
        TestResult r{"tg" + std::to_string(o.n_gen) + at + " @ B" + std::to_string(b.batch), 0, o.n_gen, depth,
                     b.seconds, b.batch};
        results.push_back(r);
      }
    } else if (o.n_gen > 0) {
      TestResult r{"tg" + std::to_string(o.n_gen) + at, 0, o.n_gen, depth, {}};
      time_generation(session, context, depth, std::min(o.n_gen, 16), 1);  // warm-up
      for (int i = 0; i < o.reps; ++i) r.seconds.push_back(time_generation(session, context, depth, o.n_gen, 1));
      results.push_back(r);
    }
  }

  const std::string label = model_label(*model);
  const std::string backend = session.device() == "cuda" ? "CUDA" : "CPU";
  uint64_t n_params = 0;
  for (const auto& t : model->file().tensors()) n_params += t.n_elements;
  const uint64_t per_token = bytes_per_token(session);
  const auto kv_per_token = [&](const TestResult& r) {
    return r.n_gen > 0 ? kv_bytes_per_token(*model, sopts.backend.kv_type, r.n_gen, r.depth) : uint64_t{0};
  };
  if (o.n_gen > 0) bandwidth = std::max(bandwidth, session.backend().measure_memory_bandwidth());
  // A step reads the weights once and each sequence's KV cache: (weights + B x
  // KV) x steps/s, steps/s = tokens/s / B.
  const auto roofline = [&](const TestResult& r) {
    return r.n_gen > 0 && bandwidth > 0
               ? (per_token + r.seqs * kv_per_token(r)) * r.mean_ts() / r.seqs / bandwidth
               : 0.0;
  };
  const bool cuda = session.device() == "cuda";
  const auto cuda_info = cuda ? cuda::cuda_backend_info(session.backend()) : cuda::CudaBackendInfo{};
  const int launches = cuda ? cuda::kernels_per_step(session.backend(), session.decode_executor().graph()) : 0;
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : results) {
      std::vector<double> ns, ts;
      for (double s : r.seconds) ns.push_back(s * 1e9), ts.push_back(r.tokens() / s);
      const double avg_ns = std::accumulate(ns.begin(), ns.end(), 0.0) / ns.size();
      double sd_ns = 0;
      for (double v : ns) sd_ns += (v - avg_ns) * (v - avg_ns);
      sd_ns = ns.size() > 1 ? std::sqrt(sd_ns / (ns.size() - 1)) : 0;
      out.push_back({{"build_commit", "rayo-" RAYO_VERSION},
                     {"model_filename", o.synth_preset.empty() ? o.model.model : "synth:" + o.synth_preset},
                     {"model_type", label},
                     {"model_size", model->weight_bytes()},
                     {"model_n_params", n_params},
                     {"n_batch", sopts.n_batch},
                     {"n_threads", session.n_threads()},
                     {"type_k", o.model.kv_type},
                     {"type_v", o.model.kv_type},
                     {"backend", backend},
                     {"n_prompt", r.n_prompt},
                     {"n_gen", r.n_gen},
                     {"n_depth", r.depth},
                     {"n_seqs", r.seqs},
                     {"avg_ns", static_cast<uint64_t>(avg_ns)},
                     {"stddev_ns", static_cast<uint64_t>(sd_ns)},
                     {"avg_ts", r.mean_ts()},
                     {"stddev_ts", r.stddev_ts()},
                     {"samples_ns", ns},
                     {"samples_ts", ts},
                     {"bytes_per_token", r.n_gen > 0 ? per_token : 0},
                     {"kv_bytes_per_token", kv_per_token(r)},
                     {"memory_bandwidth", r.n_gen > 0 ? bandwidth : 0.0},
                     {"roofline_fraction", roofline(r)},
                     {"start_seconds", start_seconds}});
      if (cuda) {
        out.back()["kernels_per_step"] = launches;
        out.back()["kernels_compiled"] = cuda_info.kernels_compiled;
        out.back()["kernel_compile_seconds"] = cuda_info.kernel_compile_seconds;
        out.back()["kernels_from_disk_cache"] = cuda_info.kernels_from_disk;
      }
    }
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  char params[32];
  if (n_params >= 1000000000)
    std::snprintf(params, sizeof params, "%.2f B", n_params / 1e9);
  else
    std::snprintf(params, sizeof params, "%.2f M", n_params / 1e6);
  std::printf("| %-30s | %10s | %8s | %-7s | %7s | %15s | %20s | %12s |\n", "model", "size", "params", "backend",
              "threads", "test", "t/s", "weights GB/s");
  std::printf("| %s | %s | %s | %s | %s | %s | %s | %s |\n", std::string(30, '-').c_str(), "---------:", "-------:",
              "-------", "------:", "--------------:", "-------------------:", "-----------:");
  for (const auto& r : results) {
    char ts[64], gbs[32] = "";
    std::snprintf(ts, sizeof ts, "%.2f ± %.2f", r.mean_ts(), r.stddev_ts());
    if (r.n_gen > 0) std::snprintf(gbs, sizeof gbs, "%.2f", per_token * r.mean_ts() / r.seqs / 1e9);
    std::printf("| %-30s | %10s | %8s | %-7s | %7d | %15s | %20s | %12s |\n", label.c_str(),
                format_bytes(model->weight_bytes()).c_str(), params, backend.c_str(), session.n_threads(),
                r.name.c_str(), ts, gbs);
  }
  std::printf("\nweights read per generated token: %s (tg t/s x this = the weights GB/s column)\n",
              format_bytes(per_token).c_str());
  for (const auto& r : results)
    if (r.n_gen > 0 && bandwidth > 0)
      std::printf("%s roofline: (%s weights + %s%s KV cache) x %.2f %s/s = %.1f GB/s, %.0f%% of the %.1f GB/s %s\n",
                  r.name.c_str(), format_bytes(per_token).c_str(),
                  r.seqs > 1 ? cat(r.seqs, " x ").c_str() : "", format_bytes(kv_per_token(r)).c_str(),
                  r.mean_ts() / r.seqs, r.seqs > 1 ? "steps" : "t",
                  (per_token + r.seqs * kv_per_token(r)) * r.mean_ts() / r.seqs / 1e9, 100 * roofline(r),
                  bandwidth / 1e9,
                  cuda ? "a device-to-device copy moves (read + write), measured in this run"
                       : "a streaming read reaches on these threads, measured in this run");
  std::printf("start: %.2f s (%s)\n", start_seconds,
              cuda ? "load, weights upload, decode kernels" : "load, weights repacked for the kernels");
  if (cuda)
    std::printf("CUDA: %s (%s), %d kernel launches per decode step (replayed as one CUDA graph launch unless --no-graph%s); "
                "%llu kernels compiled by NVRTC in %.2f s, %llu read from the kernel cache\n",
                cuda_info.device_name.c_str(), cuda_info.arch.c_str(), launches,
                cuda_info.programmatic_launch ? "; programmatic dependent launch" : "",
                static_cast<unsigned long long>(cuda_info.kernels_compiled), cuda_info.kernel_compile_seconds,
                static_cast<unsigned long long>(cuda_info.kernels_from_disk));
}

void setup(CLI::App& root) {
  auto o = std::make_shared<BenchOptions>();
  auto* cmd = root.add_subcommand("bench", "Measure prompt processing and generation speed (like llama-bench)");
  add_model_options(cmd, o->model, false);
  cmd->add_option("--synth", o->synth_preset, "benchmark a synthetic model with a real model's shapes (see rayo synth)");
  cmd->add_option("--type", o->synth_type, "weight type of the synthetic model")->capture_default_str();
  cmd->add_option("-p,--n-prompt", o->n_prompt, "prompt tokens (0: skip the pp test)")->capture_default_str();
  cmd->add_option("-n,--n-gen", o->n_gen, "generated tokens (0: skip the tg test)")->capture_default_str();
  cmd->add_option("-r,--repetitions", o->reps, "repetitions of each test")->capture_default_str();
  cmd->add_option("-B,--batch-decode", o->batches,
                  "tg of that many sequences decoded together, one token each per step (comma-separated sizes, like "
                  "llama-batched-bench's -npl); t/s counts every sequence's tokens")
      ->delimiter(',');
  cmd->add_option("-d,--n-depth", o->depths,
                  "tokens already in the context before each test, comma-separated (like llama-bench)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON with llama-bench's field names");
  cmd->add_option("--compute-type", o->compute_type,
                  "Whisper models: default (weights as stored: floats in f32 arithmetic, a ggml file's quantized ones as they are) or int8 (float weights quantized at load)")
      ->capture_default_str();
  cmd->add_flag("--kernels", o->kernels,
                "time each matmul kernel of a decode step alone on the GPU (GB/s and % of the copy bandwidth), "
                "per weight format, at the shapes of --preset");
  cmd->add_option("--preset", o->kernel.presets, "with --kernels: model shapes (rayo synth presets), comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--types", o->kernel.types, "with --kernels: weight types (default: every format), comma-separated")
      ->delimiter(',');
  cmd->add_option("--tokens", o->kernel.tokens,
                  "with --kernels: tokens per matmul, comma-separated (1: decode; from 32 on tensor cores)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--kernel-path", o->kernel.path,
                  "with --kernels: auto (the kernels a step of that many tokens uses), gemv, gemm (f16 tensor cores, "
                  "quantized types), int8 (int8 tensor cores, quantized types), exact (the int8 tensor-core GEMMs of "
                  "serve --batch-invariant, quantized types), both (each quantized case on gemv and gemm, with the "
                  "GEMM's speed-up: the crossover), all (gemv, gemm, int8 and exact) or dense (gemm beside a dense f16 GEMM: "
                  "dense16 on f16 weights, dense with each matrix decoded to f16 first; not yet used by any graph)")
      ->capture_default_str();
  cmd->callback([o] {
    if (!o->model.model.empty() && (std::filesystem::is_directory(o->model.model) ||
                                    whisper::GgmlWhisperFile::has_magic(o->model.model))) {
      // A Whisper model (a CTranslate2 folder or a whisper.cpp file): encoder and decoder speed.
      WhisperBenchOptions w{o->model.model, backend_choice(o->model), o->compute_type, o->n_gen, o->reps, o->json};
      return run_whisper_bench(w);
    }
    if (o->kernels) {
      o->kernel.reps = o->reps;
      o->kernel.json = o->json;
      return tools::run_kernel_benchmark(o->kernel);
    }
    run(*o);
  });
}

}  // namespace

RAYO_COMMAND(bench, 20, setup);

}  // namespace rayo::cli
