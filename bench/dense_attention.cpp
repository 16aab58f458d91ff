// The CPU's dense attention kernel (an encoder's self-attention, and Whisper's
// cross-attention) at Whisper's shapes: 1500 positions, heads of 64, on one
// thread. Counter: GFLOP/s (2 products of 2 * len * len * head_dim each).
//   build/bench_dense_attention
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "backends/cpu/dense_attention.h"

namespace {

using namespace rayo::cpu;

void BM_DenseAttentionHead(benchmark::State& state) {
  const int64_t len = state.range(0);
  const int d = 64;
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  std::vector<float> q(len * d), k(len * d), v(len * d), out(len * d);
  for (auto* x : {&q, &k, &v})
    for (float& f : *x) f = dist(rng);
  const DenseHead head{q.data(), k.data(), v.data(), out.data(), d, len, d, 0.125f};
  std::vector<float> kt(d * dense_padded_len(len)), scores(32 * dense_padded_len(len));
  for (auto _ : state) {
    pack_keys_transposed(head, kt.data());
    for (int64_t r = 0; r < len; r += 32) dense_attention_rows(head, kt.data(), r, std::min(len, r + 32), scores.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(4.0 * len * len * d * state.iterations(), benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_DenseAttentionHead)->Arg(1500)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
