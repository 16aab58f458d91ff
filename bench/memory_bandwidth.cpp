// Streaming-read memory bandwidth with 1 and 2 threads: the roofline for
// matrix-vector products (token generation reads every weight once per token).
// `rayo bench` measures the same (measure_read_bandwidth) in its own run.
//   build/bench_memory_bandwidth --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "backends/cpu/memory_bandwidth.h"
#include "backends/cpu/thread_pool.h"

namespace {

using rayo::cpu::ThreadPool;

// On transparent huge pages, as the packed weights are (kernels_packed.cpp):
// with 4 KiB pages (a TLB miss per page) the figure read up to 20% lower,
// below what the matmul kernels reach, and understated the roofline.
struct Buffer {
  static constexpr size_t kHuge = size_t{2} << 20;
  explicit Buffer(size_t bytes) : n(bytes / 8), data(static_cast<uint64_t*>(std::aligned_alloc(kHuge, bytes)), &std::free) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(data.get(), bytes, MADV_HUGEPAGE);
#endif
    std::memset(data.get(), 1, bytes);  // touch every page
  }
  size_t n;
  std::unique_ptr<uint64_t, decltype(&std::free)> data;
};

// range(0): threads; range(1): MiB read per iteration (1 GiB: DRAM, beyond what
// a VM host may cache too (see memory_bandwidth.h); 8 MiB fits L3).
void BM_StreamRead(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const size_t bytes = static_cast<size_t>(state.range(1)) << 20;
  Buffer buf(bytes);
  ThreadPool pool(threads);
  std::vector<uint64_t> sink(threads * 8);
  for (auto _ : state) {
    pool.run([&](int i, int n) {
      const size_t begin = buf.n * i / n / 64 * 64, end = buf.n * (i + 1) / n / 64 * 64;
      sink[i * 8] += rayo::cpu::stream_read(buf.data.get() + begin, end - begin);
    });
    benchmark::DoNotOptimize(sink.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_StreamRead)->Args({1, 1024})->Args({2, 1024})->Args({1, 8})->Args({2, 8})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
