#pragma once
// The rate at which the threads of a pool stream-read memory: the roofline of
// token generation, which reads every weight once per token. `rayo bench`
// measures it in the same run as the tokens/s it compares with it.
#include <cstddef>
#include <cstdint>

#include "backends/cpu/thread_pool.h"

namespace rayo::cpu {

// The sum of p[0..n): one streaming read of n words (p 32-byte aligned).
uint64_t stream_read(const uint64_t* p, size_t n);

// Bytes per second, the best of `passes` reads of a `bytes` buffer split over
// the pool's threads. The buffer is on transparent huge pages, as the packed
// weights are. 1 GiB, because a virtual machine's host may cache more than
// the L3 the guest is shown: on the 2-core development VM a 256 MiB buffer
// read at 60 GB/s at times, 1 GiB never above 36.
double measure_read_bandwidth(ThreadPool& pool, size_t bytes = size_t{1} << 30, int passes = 3);

}  // namespace rayo::cpu
