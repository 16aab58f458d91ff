#include "cli/whisper_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "audio/mel_window.h"
#include "backends/cuda/cuda_backend.h"
#include "common/error.h"
#include "common/strings.h"
#include "whisper/graph_runner.h"
#include "whisper/whisper_loader.h"

namespace rayo::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Timing {
  std::string test;
  std::string unit;  // what one measurement is: a window, a token, a step
  std::vector<double> ms;
  double mean() const {
    double s = 0;
    for (double m : ms) s += m;
    return s / static_cast<double>(ms.size());
  }
  double stddev() const {
    if (ms.size() < 2) return 0;
    double s = 0;
    for (double m : ms) s += (m - mean()) * (m - mean());
    return std::sqrt(s / static_cast<double>(ms.size() - 1));
  }
};

// n_tokens decoder steps of `n_seqs` sequences after the prompt, the next
// token of each its best non-final one (the values do not matter to speed;
// the length does). Returns ms per step.
double time_decoder(whisper::GraphWhisperRunner& runner, int n_seqs, int n_tokens) {
  const whisper::WhisperSpec& s = runner.spec();
  std::vector<std::vector<int32_t>> seqs(n_seqs, std::vector<int32_t>{s.sot, s.no_timestamps});
  std::vector<float> logits;
  runner.decode(seqs, logits);  // the prompt, not timed
  const auto t0 = Clock::now();
  for (int step = 0; step < n_tokens; ++step) {
    for (int i = 0; i < n_seqs; ++i) {
      const float* row = logits.data() + static_cast<size_t>(i) * s.n_vocab;
      // Text tokens only (below eot), and a different one per sequence, as beams are.
      const auto best = std::max_element(row, row + s.eot - n_seqs) - row;
      seqs[i].push_back(static_cast<int32_t>(best + i));
    }
    runner.decode(seqs, logits);
  }
  return 1e3 * seconds_since(t0) / n_tokens;
}

// On the GPU: the transfers and launches of one window and of one decoder step
// (what "resident" means: a window is its features' upload and one graph
// launch, a step one small upload, one launch, one download). Empty on the CPU.
std::string gpu_traffic(whisper::GraphWhisperRunner& runner, std::span<const float> window) {
  if (runner.backend().name() != "cuda") return {};
  const whisper::WhisperSpec& s = runner.spec();
  auto stats = [&] { return cuda::cuda_backend_info(runner.backend()).stats; };
  auto delta = [](const cuda::TransferStats& a, const cuda::TransferStats& b) {
    return cat(b.h2d - a.h2d, " upload(s) (", format_bytes(b.h2d_bytes - a.h2d_bytes), "), ", b.graph_launches - a.graph_launches,
               " graph launch(es), ", b.d2h - a.d2h, " download(s) (", format_bytes(b.d2h_bytes - a.d2h_bytes), ")");
  };
  const auto a = stats();
  runner.encode(window);
  const auto b = stats();
  std::vector<std::vector<int32_t>> seq = {{s.sot, s.no_timestamps}};
  std::vector<float> logits;
  runner.decode(seq, logits);
  seq[0].push_back(0);  // the next step: one new token over the kept ones
  const auto c = stats();
  runner.decode(seq, logits);
  const auto d = stats();
  const auto info = cuda::cuda_backend_info(runner.backend());
  return cat("on ", info.device_name, " (", info.arch, "): a 30-s window ", delta(a, b), "; a decoder step ", delta(c, d),
             "\n");
}

}  // namespace

void run_whisper_bench(const WhisperBenchOptions& o) {
  const auto load0 = Clock::now();
  const whisper::WhisperFiles files = whisper::load_whisper(o.folder);
  const whisper::WhisperSpec& s = files.spec;
  if (o.n_tokens < 1 || o.n_tokens + 2 > static_cast<int>(s.n_text_ctx))
    fail("-n must be 1 to ", s.n_text_ctx - 2, " decoder tokens");
  whisper::GraphWhisperRunner runner(files, whisper::GraphRunnerOptions{o.backend, 5, whisper::weight_format(o.compute_type)});
  const double load_s = seconds_since(load0);

  // A window of quiet: the log-mel's floor everywhere (speed does not depend on the values).
  const std::vector<float> window(static_cast<size_t>(s.n_mels) * audio::kWhisperWindowFrames, -0.5f);
  runner.encode(window);  // warm-up: first touches of the arenas
  Timing enc{"encoder", "30 s window", {}}, dec1{"decoder, 1 sequence", "token", {}},
      dec5{"decoder, 5 sequences (beam 5)", "step", {}};
  for (int r = 0; r < o.reps; ++r) {
    const auto t0 = Clock::now();
    runner.encode(window);
    enc.ms.push_back(1e3 * seconds_since(t0));
    dec1.ms.push_back(time_decoder(runner, 1, o.n_tokens));
    runner.encode(window);
    dec5.ms.push_back(time_decoder(runner, 5, o.n_tokens));
  }
  const Timing* timings[] = {&enc, &dec1, &dec5};
  const std::string model = files.spec.multilingual() ? "whisper (multilingual)" : "whisper (English-only)";
  char size[96];
  std::snprintf(size, sizeof size, "%u layers x %u, %s", s.n_audio_layer, s.n_audio_state,
                o.compute_type == "int8" ? "int8" : "as stored");
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const Timing* t : timings)
      out.push_back({{"model", o.folder}, {"test", t->test}, {"unit", t->unit}, {"n_threads", runner.n_threads()},
                     {"ms_mean", t->mean()}, {"ms_stddev", t->stddev()}, {"ms", t->ms}});
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("| %-24s | %-28s | %7s | %-30s | %16s |\n", "model", "size", "threads", "test", "ms");
  std::printf("| %-24s | %-28s | %7s | %-30s | %16s |\n", "------------------------", "----------------------------",
              "------:", "------------------------------", "---------------:");
  for (const Timing* t : timings) {
    char ms[48];
    std::snprintf(ms, sizeof ms, "%.2f ± %.2f", t->mean(), t->stddev());
    std::printf("| %-24s | %-28s | %7d | %-30s | %16s |\n", model.c_str(), size, runner.n_threads(),
                (t->test + " / " + t->unit).c_str(), ms);
  }
  std::printf("\nstart: %.2f s (load, weights prepared for the kernels); the decoder's %d tokens follow a 2-token prompt\n",
              load_s, o.n_tokens);
  std::printf("%s", gpu_traffic(runner, window).c_str());
}

}  // namespace rayo::cli
