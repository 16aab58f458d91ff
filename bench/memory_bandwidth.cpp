// Streaming-read memory bandwidth with 1 and 2 threads: the roofline for
// matrix-vector products (token generation reads every weight once per token).
// `rayo bench` measures the same (measure_read_bandwidth) in its own run.
//   build/bench_memory_bandwidth --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cpu/huge_pages.h"
#include "backends/cpu/memory_bandwidth.h"
#include "backends/cpu/thread_pool.h"

namespace {

using rayo::cpu::ThreadPool;

// range(0): threads; range(1): MiB read per iteration (1 GiB: DRAM, beyond what
// a VM host may cache too (see memory_bandwidth.h); 8 MiB fits L3).
void BM_StreamRead(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const size_t bytes = static_cast<size_t>(state.range(1)) << 20;
  // On huge pages, as the packed weights are (see measure_read_bandwidth).
  const rayo::cpu::HugePageBuffer buffer = rayo::cpu::allocate_huge_pages(bytes, "the benchmark buffer");
  std::memset(buffer.get(), 1, bytes);  // touch every page
  const auto* words = reinterpret_cast<const uint64_t*>(buffer.get());
  const size_t n_words = bytes / sizeof(uint64_t);
  ThreadPool pool(threads);
  std::vector<uint64_t> sink(threads * 8);
  for (auto _ : state) {
    pool.run([&](int i, int n) {
      const size_t begin = n_words * i / n / 64 * 64, end = n_words * (i + 1) / n / 64 * 64;
      sink[i * 8] += rayo::cpu::stream_read(words + begin, end - begin);
    });
    benchmark::DoNotOptimize(sink.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_StreamRead)->Args({1, 1024})->Args({2, 1024})->Args({1, 8})->Args({2, 8})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
