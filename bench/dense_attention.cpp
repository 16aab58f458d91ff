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

std::vector<float> random_values(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> dist;
  std::vector<float> x(n);
  for (float& f : x) f = dist(rng);
  return x;
}

void BM_DenseAttentionHead(benchmark::State& state) {
  const int64_t len = state.range(0);
  const int d = 64;
  std::mt19937 rng(1);
  const std::vector<float> q = random_values(len * d, rng), k = random_values(len * d, rng),
                           v = random_values(len * d, rng);
  std::vector<float> out(len * d);
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

// A decoder step's cross-attention of one head: 1 (greedy) or 5 (beam) queries
// over the window's 1500 keys, packed once per window, as the decoder runs it.
void BM_CrossAttentionQueries(benchmark::State& state) {
  const int64_t rows = state.range(0), len = 1500;
  const int d = 64;
  std::mt19937 rng(1);
  const std::vector<float> q = random_values(rows * d, rng), k = random_values(len * d, rng),
                           v = random_values(len * d, rng);
  std::vector<float> out(rows * d);
  const DenseHead head{q.data(), k.data(), v.data(), out.data(), d, len, d, 0.125f};
  std::vector<float> kt(d * dense_padded_len(len)), scores(32 * dense_padded_len(len));
  pack_keys_transposed(head, kt.data());
  for (auto _ : state) {
    dense_attention_rows(head, kt.data(), 0, rows, scores.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(4.0 * rows * len * d * state.iterations(), benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_CrossAttentionQueries)->Arg(1)->Arg(5)->Unit(benchmark::kMicrosecond);

// A whole decoder step's cross-attention at Whisper tiny's shapes: 4 layers of
// 6 heads of 64 over 1500 positions, keys transposed and values laid out as
// the KV cache keeps them (values' rows 384 floats apart), 18 MB in all, more
// than the caches hold, so each step reads it from memory as a decoder does.
void BM_CrossAttentionStep(benchmark::State& state) {
  const int64_t rows = state.range(0), len = 1500, padded = dense_padded_len(len);
  const int d = 64, heads = 6, layers = 4, width = heads * d;
  std::mt19937 rng(1);
  const std::vector<float> q = random_values(rows * width, rng);
  std::vector<float> out(rows * width), scores(32 * padded);
  std::vector<std::vector<float>> kt, v;
  for (int l = 0; l < layers; ++l) {
    kt.push_back(random_values(width * padded, rng));
    v.push_back(random_values(len * width, rng));
  }
  for (auto _ : state) {
    for (int l = 0; l < layers; ++l)
      for (int h = 0; h < heads; ++h) {
        const DenseHead head{q.data() + h * d, nullptr, v[l].data() + h * d, out.data() + h * d, width, len, d, 0.125f};
        dense_attention_rows(head, kt[l].data() + h * d * padded, 0, rows, scores.data());
      }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GB/s"] = benchmark::Counter(4.0 * layers * (width * padded + len * width) * state.iterations(),
                                              benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_CrossAttentionStep)->Arg(1)->Arg(5)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
