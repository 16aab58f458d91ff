#include "backends/cpu/huge_pages.h"

#include "common/error.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace rayo::cpu {

HugePageBuffer allocate_huge_pages(size_t bytes, std::string_view what) {
  constexpr size_t kHuge = size_t{2} << 20;
  void* p = nullptr;
  if (posix_memalign(&p, kHuge, bytes == 0 ? 1 : bytes) != 0 || p == nullptr)
    fail("out of memory allocating ", what, " (", bytes, " bytes)");
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= kHuge) madvise(p, bytes / kHuge * kHuge, MADV_HUGEPAGE);
#endif
  return HugePageBuffer(static_cast<std::byte*>(p));
}

}  // namespace rayo::cpu
