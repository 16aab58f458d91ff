// Streaming-read memory bandwidth with 1 and 2 threads: the roofline for
// matrix-vector products (token generation reads every weight once per token).
// `rayo bench` measures the same (measure_read_bandwidth) in its own run.
//   build/bench_memory_bandwidth --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "backends/cpu/memory_bandwidth.h"
#include "backends/cpu/thread_pool.h"

namespace {

using rayo::cpu::ThreadPool;

// range(0): threads; range(1): MiB read per iteration (1 GiB: DRAM, beyond what
// a VM host may cache too (see memory_bandwidth.h); 8 MiB fits L3).
void BM_StreamRead(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const size_t bytes = static_cast<size_t>(state.range(1)) << 20;
  const rayo::cpu::StreamReadBuffer buffer(bytes);
  ThreadPool pool(threads);
  std::vector<uint64_t> sink(threads * 8);
  for (auto _ : state) {
    pool.run([&](int i, int n) { sink[i * 8] += buffer.read_share(i, n); });
    benchmark::DoNotOptimize(sink.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_StreamRead)->Args({1, 1024})->Args({2, 1024})->Args({1, 8})->Args({2, 8})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
