#pragma once
// Buffers on transparent huge pages, for data the CPU kernels stream from
// end to end (packed weights, the bandwidth probe): with 4 KiB pages a
// stream takes a TLB miss every 4 KiB and reads measurably slower.
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string_view>

namespace rayo::cpu {

struct FreeHugePages {
  void operator()(std::byte* p) const { std::free(p); }
};
using HugePageBuffer = std::unique_ptr<std::byte[], FreeHugePages>;

// `bytes` uninitialised bytes, 2 MiB-aligned; on Linux the whole 2 MiB pages
// inside are marked for transparent huge pages. The size is not rounded up,
// so a small buffer does not pin a whole huge page (the tail beyond the last
// whole 2 MiB stays in ordinary pages). Out of memory: rayo::Error naming
// `what` and the size.
HugePageBuffer allocate_huge_pages(size_t bytes, std::string_view what);

}  // namespace rayo::cpu
