// CPU matmul kernels at TinyLlama-1.1B shapes (dim 2048, ffn 5632, 4 KV heads
// of 64 -> 256, vocab 32000), 2 threads:
//   GEMV           n_tokens = 1       (token generation: weight-bandwidth bound)
//   BatchedDecode  n_tokens = 16, 11  (a server's decode step: 16 is two tiles
//                                      of 8 tokens, 11 is 6 + 5)
//   GEMM           n_tokens = 512     (prompt processing: compute bound)
// Counters: weight_GB/s (weight bytes read per second; for GEMV the weights
// rotate through enough copies to exceed the L3 cache, as in a real model) and
// GFLOP/s (2 * rows * cols * tokens per second).
//   build/bench_cpu_matmul --benchmark_counters_tabular=true
//   RAYO_CPU_ISA=avx2 build/bench_cpu_matmul ...   (force an instruction set)
//   RAYO_BENCH_TYPES=q4_0,q5_1 build/bench_cpu_matmul ...   (other formats)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/matmul.h"
#include "common/half.h"

namespace {

using namespace rayo;
using namespace rayo::cpu;

// Random bytes with every half-precision scale field set to a moderate value.
std::vector<uint8_t> random_weights(TensorType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t bytes = row_bytes(type, cols) * rows;
  std::vector<uint8_t> buf(bytes);
  for (size_t i = 0; i + 4 <= bytes; i += 4) {
    const uint32_t v = rng();
    std::memcpy(buf.data() + i, &v, 4);
  }
  const auto put = [&](size_t off, float v) {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(buf.data() + off, &h, 2);
  };
  const auto& ti = info(type);
  if (type == TensorType::F16) {
    for (size_t i = 0; i < bytes / 2; ++i) put(2 * i, static_cast<float>(static_cast<int>(rng() % 2001) - 1000) * 1e-3f);
    return buf;
  }
  // Offsets of the half-precision scale fields within a block (quant/blocks.h).
  std::vector<size_t> halves;
  switch (type) {
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
    case TensorType::IQ4_NL:
    case TensorType::IQ4_XS: halves = {0}; break;
    case TensorType::Q4_1:
    case TensorType::Q5_1:
    case TensorType::Q4_K:
    case TensorType::Q5_K: halves = {0, 2}; break;
    case TensorType::Q2_K: halves = {80, 82}; break;
    case TensorType::Q3_K: halves = {108}; break;
    case TensorType::Q6_K: halves = {208}; break;
    default: break;
  }
  for (size_t b = 0; b < bytes / ti.block_bytes; ++b)
    for (size_t off : halves) put(b * ti.block_bytes + off, ti.block_size == 256 ? 0.002f : 0.01f);
  return buf;
}

// Threads: 2 (the target machine's cores), or $RAYO_BENCH_THREADS.
int bench_threads() {
  const char* env = std::getenv("RAYO_BENCH_THREADS");
  return env ? std::max(1, std::atoi(env)) : 2;
}

struct Fixture {
  Fixture(TensorType type, int64_t rows, int64_t cols, int64_t n_tokens, int copies) : pool(bench_threads()) {
    for (int c = 0; c < copies; ++c) {
      data.push_back(random_weights(type, rows, cols, 17 + c));
      weights.push_back(prepare_weight(type, data.back().data(), rows, cols));
    }
    x.resize(n_tokens * cols);
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto& v : x) v = nd(rng);
    y.resize(n_tokens * rows);
    ws.resize(matmul_workspace_bytes(weights[0], n_tokens, pool.size()));
  }
  ThreadPool pool;
  std::vector<std::vector<uint8_t>> data;
  std::vector<MatmulWeight> weights;
  std::vector<float> x, y;
  std::vector<std::byte> ws;
};

// args: type, rows, cols, n_tokens
void BM_Matmul(benchmark::State& state) {
  const auto type = static_cast<TensorType>(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), n_tokens = state.range(3);
  const size_t wbytes = row_bytes(type, cols) * rows;
  // Decode (one token, or a server's batch of 16): enough copies to exceed a
  // 32 MiB L3, so weights stream from DRAM as they do in a decode step.
  int copies = n_tokens <= 16 ? static_cast<int>(std::max<size_t>(1, (96u << 20) / wbytes + 1)) : 1;
  if (const char* env = std::getenv("RAYO_BENCH_COPIES")) copies = std::max(1, std::atoi(env));  // 1: cache-resident
  Fixture f(type, rows, cols, n_tokens, copies);
  size_t i = 0;
  for (auto _ : state) {
    matmul(f.pool, f.weights[i], f.x.data(), n_tokens, f.y.data(), f.ws.data());
    benchmark::DoNotOptimize(f.y.data());
    if (++i == f.weights.size()) i = 0;
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] = benchmark::Counter(iters * wbytes * 1e-9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(iters * 2.0 * rows * cols * n_tokens * 1e-9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(type_name(type)) + " " + std::to_string(rows) + "x" + std::to_string(cols) + " t" +
                 std::to_string(n_tokens));
}

// The formats: $RAYO_BENCH_TYPES (comma-separated, e.g. q4_0,q4_k), by default
// those of Q4_K_M and Q8_0 files and F16.
std::vector<TensorType> bench_types() {
  const char* env = std::getenv("RAYO_BENCH_TYPES");
  if (env == nullptr) return {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0, TensorType::F16};
  std::vector<TensorType> types;
  std::string list(env);
  for (size_t start = 0; start <= list.size();) {
    const size_t end = std::min(list.find(',', start), list.size());
    if (const auto t = parse_tensor_type(list.substr(start, end - start))) types.push_back(*t);
    start = end + 1;
  }
  return types;
}

// TinyLlama-1.1B's matrices, or with $RAYO_BENCH_SHAPES=qwen Qwen2.5-0.5B's
// (width 896: q/o, k/v, gate/up, down, the tied output).
void shapes(benchmark::internal::Benchmark* b, int64_t n_tokens) {
  const char* env = std::getenv("RAYO_BENCH_SHAPES");
  const bool qwen = env != nullptr && std::string(env) == "qwen";
  const std::vector<std::array<int64_t, 2>> tinyllama = {{2048, 2048}, {256, 2048}, {5632, 2048}, {2048, 5632}, {32000, 2048}};
  const std::vector<std::array<int64_t, 2>> qwen05 = {{896, 896}, {128, 896}, {4864, 896}, {896, 4864}, {151936, 896}};
  for (TensorType t : bench_types())
    for (const auto& rc : qwen ? qwen05 : tinyllama) b->Args({static_cast<int64_t>(t), rc[0], rc[1], n_tokens});
}

BENCHMARK(BM_Matmul)->Name("GEMV")->Apply([](auto* b) { shapes(b, 1); })->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Matmul)->Name("BatchedDecode")->Apply([](auto* b) { shapes(b, 16); shapes(b, 11); })->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Matmul)->Name("GEMM")->Apply([](auto* b) { shapes(b, 512); })->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.3);

// Load-time cost of prepare_weight (repacking into the interleaved layout).
void BM_PrepareWeight(benchmark::State& state) {
  const auto type = static_cast<TensorType>(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2);
  const auto data = random_weights(type, rows, cols, 5);
  for (auto _ : state) {
    MatmulWeight w = prepare_weight(type, data.data(), rows, cols);
    benchmark::DoNotOptimize(w.packed.get());
  }
  state.counters["weight_GB/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * data.size() * 1e-9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PrepareWeight)
    ->Args({static_cast<int64_t>(TensorType::Q4_K), 5632, 2048})
    ->Args({static_cast<int64_t>(TensorType::Q6_K), 32000, 2048})
    ->Args({static_cast<int64_t>(TensorType::Q8_0), 5632, 2048})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Dispatch latency of an empty run on the 2-thread pool (a decode step makes
// ~10 runs per layer).
void BM_ThreadPoolDispatch(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  int sink[2] = {};
  for (auto _ : state) {
    pool.run([&](int i, int) { sink[i & 1] += 1; });
    benchmark::DoNotOptimize(sink);
  }
}
BENCHMARK(BM_ThreadPoolDispatch)->Arg(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
