#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/error.h"
#include "runtime/block_allocator.h"

namespace rayo::runtime {
namespace {

TEST(BlockAllocator, HandsOutEveryBlockOnceThenRefuses) {
  BlockAllocator a(8, 16);
  EXPECT_EQ(a.n_free(), 8);
  std::vector<int32_t> t1, t2;
  ASSERT_TRUE(a.allocate(5, t1));
  ASSERT_TRUE(a.allocate(3, t2));
  EXPECT_EQ(a.n_free(), 0);
  EXPECT_EQ(a.n_used(), 8);
  std::set<int32_t> all(t1.begin(), t1.end());
  all.insert(t2.begin(), t2.end());
  EXPECT_EQ(all.size(), 8u);
  EXPECT_EQ(*all.begin(), 0);
  EXPECT_EQ(*all.rbegin(), 7);
  std::vector<int32_t> t3;
  EXPECT_FALSE(a.allocate(1, t3));
  EXPECT_TRUE(t3.empty());  // a refused allocation changes nothing
}

TEST(BlockAllocator, ReleasedBlocksAreReused) {
  BlockAllocator a(4, 16);
  std::vector<int32_t> t1, t2;
  ASSERT_TRUE(a.allocate(4, t1));
  a.release(std::span<const int32_t>(t1).subspan(1, 2));
  EXPECT_EQ(a.n_free(), 2);
  ASSERT_TRUE(a.allocate(2, t2));
  std::sort(t2.begin(), t2.end());
  EXPECT_EQ(t2, (std::vector<int32_t>{t1[1], t1[2]}));
  EXPECT_FALSE(a.allocate(1, t2));
}

TEST(BlockAllocator, SharedBlockIsFreedByItsLastHolder) {
  BlockAllocator a(2, 16);
  std::vector<int32_t> t;
  ASSERT_TRUE(a.allocate(1, t));
  a.retain(t[0]);
  EXPECT_EQ(a.ref_count(t[0]), 2);
  a.release(t);
  EXPECT_EQ(a.n_free(), 1);  // still held once
  a.release(t);
  EXPECT_EQ(a.n_free(), 2);
  EXPECT_EQ(a.ref_count(t[0]), 0);
}

TEST(BlockAllocator, RejectsMisuse) {
  BlockAllocator a(2, 4);
  EXPECT_EQ(a.blocks_for(0), 0);
  EXPECT_EQ(a.blocks_for(4), 1);
  EXPECT_EQ(a.blocks_for(5), 2);
  const std::vector<int32_t> never = {1};
  EXPECT_THROW(a.release(never), Error);  // double free / never allocated
  EXPECT_THROW(a.retain(0), Error);
  const std::vector<int32_t> outside = {7};
  EXPECT_THROW(a.release(outside), Error);
  EXPECT_THROW(BlockAllocator(0, 16), Error);
  EXPECT_THROW(BlockAllocator(4, 0), Error);
}

TEST(BlockAllocator, CachedBlocksOutliveTheirHoldersUntilNeeded) {
  BlockAllocator a(4, 16);
  std::vector<int32_t> evicted;
  a.on_evict([&](int32_t b) { evicted.push_back(b); });
  std::vector<int32_t> t;
  ASSERT_TRUE(a.allocate(2, t));
  a.mark_cached(t[0]);
  a.release(t);
  // The cached block is idle, not free, but still counts as available.
  EXPECT_EQ(a.n_idle_cached(), 1);
  EXPECT_EQ(a.n_free(), 4);
  EXPECT_EQ(a.n_used(), 0);
  EXPECT_TRUE(a.cached(t[0]));
  // Taking it back holds it again, contents intact.
  a.retain(t[0]);
  EXPECT_EQ(a.ref_count(t[0]), 1);
  EXPECT_EQ(a.n_idle_cached(), 0);
  EXPECT_EQ(a.n_used(), 1);
  a.release(std::vector<int32_t>{t[0]});
  // Plain free blocks go first; the cached one is evicted only when nothing else is left.
  std::vector<int32_t> u;
  ASSERT_TRUE(a.allocate(3, u));
  EXPECT_TRUE(evicted.empty());
  EXPECT_EQ(std::count(u.begin(), u.end(), t[0]), 0);
  ASSERT_TRUE(a.allocate(1, u));
  EXPECT_EQ(evicted, std::vector<int32_t>{t[0]});
  EXPECT_EQ(u.back(), t[0]);
  EXPECT_FALSE(a.cached(t[0]));
  EXPECT_EQ(a.n_free(), 0);
}

TEST(BlockAllocator, EvictsTheCachedBlockReleasedLongestAgo) {
  BlockAllocator a(3, 16);
  std::vector<int32_t> evicted;
  a.on_evict([&](int32_t b) { evicted.push_back(b); });
  std::vector<int32_t> t;
  ASSERT_TRUE(a.allocate(3, t));
  for (int32_t b : t) a.mark_cached(b);
  a.release(std::vector<int32_t>{t[2]});
  a.release(std::vector<int32_t>{t[0]});
  a.release(std::vector<int32_t>{t[1]});
  std::vector<int32_t> u;
  ASSERT_TRUE(a.allocate(2, u));
  EXPECT_EQ(evicted, (std::vector<int32_t>{t[2], t[0]}));
  EXPECT_EQ(a.n_idle_cached(), 1);
}

TEST(BlockAllocator, RefusesToRetainOrCacheAFreeBlock) {
  BlockAllocator a(2, 16);
  std::vector<int32_t> t;
  ASSERT_TRUE(a.allocate(1, t));
  a.release(t);
  EXPECT_THROW(a.retain(t[0]), Error);  // free, and not cached: its contents mean nothing
  EXPECT_THROW(a.mark_cached(t[0]), Error);
}

}  // namespace
}  // namespace rayo::runtime
