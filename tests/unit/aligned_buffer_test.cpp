// AlignedBuffer: zero-filled and aligned whatever its size; a large one is
// mapped memory that takes no resident pages until written (a KV cache sized
// for every slot's whole context costs what a run writes); moves hand over
// the memory; discarded contents give their memory back.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <utility>

#include "common/aligned_buffer.h"

namespace rayo {
namespace {

// Resident pages of this process, from /proc/self/statm (Linux).
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

bool all_zero(const AlignedBuffer& b) {
  for (size_t i = 0; i < b.size(); ++i)
    if (b.data()[i] != std::byte{0}) return false;
  return true;
}

TEST(AlignedBuffer, SmallAndLargeBuffersAreZeroAndAligned) {
  for (size_t bytes : {size_t{1}, size_t{1000}, size_t{1} << 20, (size_t{3} << 20) + 7}) {
    for (size_t alignment : {size_t{64}, size_t{256}}) {
      AlignedBuffer b(bytes, alignment);
      EXPECT_EQ(b.size(), bytes);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % alignment, 0u) << bytes;
      EXPECT_TRUE(all_zero(b)) << bytes;
    }
  }
  AlignedBuffer empty(0);
  EXPECT_EQ(empty.data(), nullptr);
}

TEST(AlignedBuffer, ResizingGivesZerosAgain) {
  AlignedBuffer b(4 << 20);
  b.data()[123] = std::byte{7};
  b.resize(4 << 20);
  EXPECT_TRUE(all_zero(b));
  b.data()[5] = std::byte{9};
  b.resize(100);
  EXPECT_TRUE(all_zero(b));
}

TEST(AlignedBuffer, MovesHandOverTheMemory) {
  AlignedBuffer a(2 << 20);
  a.data()[42] = std::byte{1};
  const std::byte* p = a.data();
  AlignedBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT: moved-from is empty by contract
  EXPECT_EQ(a.size(), 0u);       // NOLINT
  AlignedBuffer c(16);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.data()[42], std::byte{1});
}

TEST(AlignedBuffer, LargeBuffersTakeMemoryOnlyWhereWritten) {
  const size_t bytes = size_t{256} << 20;
  const int64_t before = resident_bytes();
  AlignedBuffer b(bytes);
  const int64_t allocated = resident_bytes();
  EXPECT_LT(allocated - before, int64_t{16} << 20) << "a 256 MiB buffer made resident at allocation";
  for (size_t i = 0; i < bytes / 4; i += 4096) b.data()[i] = std::byte{1};  // a quarter of it
  const int64_t written = resident_bytes();
  EXPECT_GT(written - before, int64_t{48} << 20);
  EXPECT_LT(written - before, int64_t{112} << 20);
}

TEST(AlignedBuffer, DiscardedContentsGiveTheirMemoryBackAndCannotBeRead) {
  const size_t bytes = size_t{64} << 20;
  const int64_t before = resident_bytes();
  AlignedBuffer b(bytes);
  for (size_t i = 0; i < bytes; i += 4096) b.data()[i] = std::byte{1};
  EXPECT_GT(resident_bytes() - before, int64_t{56} << 20);
  const std::byte* p = b.data();
  b.discard();
  EXPECT_LT(resident_bytes() - before, int64_t{8} << 20) << "the discarded pages stayed resident";
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.size(), bytes);
  EXPECT_DEATH((void)*static_cast<const volatile std::byte*>(b.data() + 4096), "") << "a discarded page read back";

  AlignedBuffer small(1000);
  small.data()[10] = std::byte{3};
  small.discard();  // too small to be mapped: kept as it is
  EXPECT_EQ(small.data()[10], std::byte{3});
}

}  // namespace
}  // namespace rayo
