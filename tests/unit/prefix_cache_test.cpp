// The prefix cache's index: what a lookup finds after inserts, that chains are
// matched block by block from the start, and that forgetting a block makes
// everything that continued it unreachable.
#include <gtest/gtest.h>

#include <numeric>

#include "common/error.h"
#include "runtime/prefix_cache.h"

namespace rayo::runtime {
namespace {

std::vector<int32_t> iota_tokens(size_t n, int32_t first) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// Indexes the whole blocks of `tokens` in the given blocks; returns the chain ids.
std::vector<uint64_t> index(PrefixCache& c, const std::vector<int32_t>& tokens, const std::vector<int32_t>& blocks,
                            int64_t bs) {
  std::vector<uint64_t> chain;
  for (size_t i = 0; i < blocks.size(); ++i) {
    bool inserted = false;
    const uint64_t parent = i ? chain.back() : PrefixCache::kRoot;
    chain.push_back(c.insert(parent, std::span(tokens).subspan(i * bs, bs), blocks[i], &inserted));
    EXPECT_TRUE(inserted);
  }
  return chain;
}

TEST(PrefixCache, FindsTheLongestIndexedPrefixOfWholeBlocks) {
  PrefixCache c(4);
  const auto a = iota_tokens(12, 100);
  const auto chain = index(c, a, {7, 3, 9}, 4);
  EXPECT_EQ(c.size(), 3);

  auto hits = c.lookup(a, 10);
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_EQ(hits[0].block, 7);
  EXPECT_EQ(hits[1].block, 3);
  EXPECT_EQ(hits[2].block, 9);
  EXPECT_EQ(hits[2].chain, chain[2]);

  EXPECT_EQ(c.lookup(a, 2).size(), 2u);                                     // at most max_blocks
  EXPECT_EQ(c.lookup(std::span(a).first(7), 10).size(), 1u);               // whole blocks only
  auto b = a;
  b[5] = 1;  // differs inside the second block
  EXPECT_EQ(c.lookup(b, 10).size(), 1u);
  b = a;
  b[0] = 1;  // differs in the first block: nothing after it matches either
  EXPECT_TRUE(c.lookup(b, 10).empty());
}

TEST(PrefixCache, SameTokensAfterADifferentPrefixAreDifferentContents) {
  PrefixCache c(2);
  const std::vector<int32_t> a = {1, 2, 5, 6}, b = {3, 4, 5, 6};
  index(c, a, {0, 1}, 2);
  index(c, b, {2, 3}, 2);  // the second blocks hold the same tokens, in other contexts
  const auto hits = c.lookup(b, 2);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[1].block, 3);
  EXPECT_EQ(c.lookup(a, 2)[1].block, 1);
}

TEST(PrefixCache, AnIndexedContentIsKeptUnderItsFirstBlock) {
  PrefixCache c(2);
  const std::vector<int32_t> a = {1, 2};
  bool inserted = false;
  const uint64_t first = c.insert(PrefixCache::kRoot, a, 5, &inserted);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(c.insert(PrefixCache::kRoot, a, 6, &inserted), first);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(c.lookup(a, 1)[0].block, 5);
  EXPECT_EQ(c.size(), 1);
  EXPECT_THROW(c.insert(PrefixCache::kRoot, std::vector<int32_t>{1, 2, 3}, 7, &inserted), Error);
}

TEST(PrefixCache, ForgettingABlockCutsTheChainsThroughIt) {
  PrefixCache c(2);
  const auto a = iota_tokens(6, 10);
  index(c, a, {4, 5, 6}, 2);
  c.forget(5);
  EXPECT_EQ(c.lookup(a, 3).size(), 1u);
  // The same contents indexed again under another block form a new chain;
  // the old third block, which continued the forgotten one, stays unreachable.
  bool inserted = false;
  const uint64_t first = c.lookup(a, 1)[0].chain;
  c.insert(first, std::span(a).subspan(2, 2), 8, &inserted);
  EXPECT_TRUE(inserted);
  const auto hits = c.lookup(a, 3);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[1].block, 8);
  c.forget(4);
  EXPECT_TRUE(c.lookup(a, 3).empty());
  c.forget(4);  // forgetting an unindexed block is harmless
}

}  // namespace
}  // namespace rayo::runtime
