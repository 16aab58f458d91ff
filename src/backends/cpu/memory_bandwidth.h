#pragma once
// The rate at which the threads of a pool stream-read memory: the roofline of
// token generation, which reads every weight once per token. `rayo bench`
// measures it in the same run as the tokens/s it compares with it.
#include <cstddef>
#include <cstdint>

#include "backends/cpu/huge_pages.h"
#include "backends/cpu/thread_pool.h"

namespace rayo::cpu {

// The sum of p[0..n): one streaming read of n words (p 32-byte aligned).
uint64_t stream_read(const uint64_t* p, size_t n);

// A buffer to stream-read, on transparent huge pages as the packed weights
// are (with 4 KiB pages, a TLB miss per page, the reads come up to 20% slower
// than the matmul kernels' own), every page touched.
class StreamReadBuffer {
 public:
  explicit StreamReadBuffer(size_t bytes);
  size_t bytes() const { return n_words_ * sizeof(uint64_t); }
  // Thread i of n reads its share of the buffer (stream_read); the sum.
  uint64_t read_share(int i, int n) const;

 private:
  HugePageBuffer data_;
  size_t n_words_;
};

// Bytes per second, the best of `passes` reads of a `bytes` StreamReadBuffer
// (rounded down to whole 2 MiB pages) split over the pool's threads. 1 GiB, because a virtual machine's host may cache more than
// the L3 the guest is shown: on the 2-core development VM a 256 MiB buffer
// read at 60 GB/s at times, 1 GiB never above 36.
double measure_read_bandwidth(ThreadPool& pool, size_t bytes = size_t{1} << 30, int passes = 3);

}  // namespace rayo::cpu
