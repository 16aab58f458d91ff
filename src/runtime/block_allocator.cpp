#include "runtime/block_allocator.h"

#include "common/error.h"

namespace rayo::runtime {

BlockAllocator::BlockAllocator(int64_t n_blocks, int64_t block_size) : block_size_(block_size) {
  if (n_blocks <= 0 || n_blocks > INT32_MAX) fail("the KV cache needs a positive number of blocks, got ", n_blocks);
  if (block_size <= 0) fail("KV cache blocks need a positive size, got ", block_size);
  refs_.assign(static_cast<size_t>(n_blocks), 0);
  cached_.assign(static_cast<size_t>(n_blocks), false);
  idle_position_.resize(static_cast<size_t>(n_blocks));
  free_.reserve(static_cast<size_t>(n_blocks));
  for (int64_t b = n_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));  // block 0 first
}

void BlockAllocator::check(int32_t block) const {
  RAYO_CHECK(block >= 0 && block < n_blocks(), "block ", block, " outside the pool of ", n_blocks());
}

bool BlockAllocator::allocate(int64_t n, std::vector<int32_t>& table) {
  RAYO_CHECK(n >= 0, "negative block count ", n);
  if (n > n_free()) return false;
  for (int64_t i = 0; i < n; ++i) {
    int32_t b;
    if (!free_.empty()) {
      b = free_.back();
      free_.pop_back();
    } else {
      b = idle_cached_.front();
      idle_cached_.pop_front();
      if (on_evict_) on_evict_(b);
      cached_[b] = false;
    }
    refs_[b] = 1;
    table.push_back(b);
  }
  return true;
}

void BlockAllocator::retain(int32_t block) {
  check(block);
  if (refs_[block] == 0) {
    RAYO_CHECK(cached_[block], "retaining block ", block, ", which is free");
    idle_cached_.erase(idle_position_[block]);
  }
  ++refs_[block];
}

void BlockAllocator::release(std::span<const int32_t> blocks) {
  for (int32_t b : blocks) {
    check(b);
    RAYO_CHECK(refs_[b] > 0, "releasing block ", b, ", which is not in use");
    if (--refs_[b] > 0) continue;
    if (cached_[b])
      idle_position_[b] = idle_cached_.insert(idle_cached_.end(), b);
    else
      free_.push_back(b);
  }
}

void BlockAllocator::mark_cached(int32_t block) {
  check(block);
  RAYO_CHECK(refs_[block] > 0, "caching block ", block, ", which is not in use");
  cached_[block] = true;
}

bool BlockAllocator::cached(int32_t block) const {
  check(block);
  return cached_[block];
}

int32_t BlockAllocator::ref_count(int32_t block) const {
  check(block);
  return refs_[block];
}

}  // namespace rayo::runtime
