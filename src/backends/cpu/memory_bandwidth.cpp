#include "backends/cpu/memory_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "backends/cpu/cpu_features.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rayo::cpu {
namespace {

// Sums 64-bit lanes so the loads cannot be optimised away; 8 independent
// accumulators over four cache lines per iteration keep enough loads in flight
// for one core to reach its share of the DRAM bandwidth.
#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t sum_range_avx2(const uint64_t* p, size_t n) {
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
#endif

}  // namespace

uint64_t stream_read(const uint64_t* p, size_t n) {
#if defined(__x86_64__)
  if (active_isa() >= Isa::Avx2) return sum_range_avx2(p, n);
#endif
  uint64_t s[4] = {};
  size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) s[j] += p[i + j];
  for (; i < n; ++i) s[0] += p[i];
  return s[0] + s[1] + s[2] + s[3];
}

StreamReadBuffer::StreamReadBuffer(size_t bytes)
    : data_(allocate_huge_pages(bytes, "a memory bandwidth probe")), n_words_(bytes / sizeof(uint64_t)) {
  std::memset(data_.get(), 1, bytes);
}

uint64_t StreamReadBuffer::read_share(int i, int n) const {
  // Shares start on 32-word (256-byte) boundaries, the AVX2 loop's stride.
  const size_t begin = n_words_ * i / n / 32 * 32, end = n_words_ * (i + 1) / n / 32 * 32;
  return stream_read(reinterpret_cast<const uint64_t*>(data_.get()) + begin, end - begin);
}

double measure_read_bandwidth(ThreadPool& pool, size_t bytes, int passes) {
  constexpr size_t kHuge = size_t{2} << 20;
  const StreamReadBuffer buffer(std::max(kHuge, bytes / kHuge * kHuge));
  std::atomic<uint64_t> sink{0};  // the sums' destination: the loads cannot be optimised away
  double best = 0;
  for (int pass = 0; pass < std::max(1, passes); ++pass) {
    const auto start = std::chrono::steady_clock::now();
    pool.run([&](int i, int nt) { sink.fetch_add(buffer.read_share(i, nt), std::memory_order_relaxed); });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(buffer.bytes()) / seconds);
  }
  return best;
}

}  // namespace rayo::cpu
