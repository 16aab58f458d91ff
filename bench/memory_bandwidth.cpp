// Streaming-read memory bandwidth with 1 and 2 threads: the roofline for
// matrix-vector products (token generation reads every weight once per token).
//   build/bench_memory_bandwidth --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "backends/cpu/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using rayo::cpu::ThreadPool;

#if defined(__x86_64__)
// Sums 64-bit lanes so the loads cannot be optimised away; 8 independent
// accumulators over four cache lines per iteration keep enough loads in flight
// for one core to reach its share of the DRAM bandwidth.
__attribute__((target("avx2"))) uint64_t sum_range(const uint64_t* p, size_t n) {
  __m256i acc[8];
  for (auto& a : acc) a = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int j = 0; j < 8; ++j)
      acc[j] = _mm256_add_epi64(acc[j], _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 4 * j)));
  for (int j = 1; j < 8; ++j) acc[0] = _mm256_add_epi64(acc[0], acc[j]);
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc[0]);
  uint64_t s = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < n; ++i) s += p[i];
  return s;
}
#else
uint64_t sum_range(const uint64_t* p, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; ++i) s += p[i];
  return s;
}
#endif

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

// range(0): threads; range(1): MiB read per iteration (256 MiB >> L3 = DRAM, 8 MiB fits L3).
void BM_StreamRead(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const size_t bytes = static_cast<size_t>(state.range(1)) << 20;
  Buffer buf(bytes);
  ThreadPool pool(threads);
  std::vector<uint64_t> sink(threads * 8);
  for (auto _ : state) {
    pool.run([&](int i, int n) {
      const size_t begin = buf.n * i / n / 64 * 64, end = buf.n * (i + 1) / n / 64 * 64;
      sink[i * 8] += sum_range(buf.data.get() + begin, end - begin);
    });
    benchmark::DoNotOptimize(sink.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_StreamRead)->Args({1, 256})->Args({2, 256})->Args({1, 8})->Args({2, 8})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
