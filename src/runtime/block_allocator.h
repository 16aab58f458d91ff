#pragma once
// Hands out the fixed-size blocks of the paged KV cache (graph/backend.h) to
// sequences. A block holds `block_size` consecutive positions of one sequence;
// a sequence's block table lists its blocks in position order. Blocks are
// reference counted so that a block may be shared (copy-on-write prefix
// sharing); a block returns to the free list when its last holder releases it.
//
// Not thread-safe: the scheduler thread is its only user.
#include <cstdint>
#include <span>
#include <vector>

namespace rayo::runtime {

class BlockAllocator {
 public:
  BlockAllocator(int64_t n_blocks, int64_t block_size);

  int64_t n_blocks() const { return static_cast<int64_t>(refs_.size()); }
  int64_t block_size() const { return block_size_; }
  int64_t n_free() const { return static_cast<int64_t>(free_.size()); }
  int64_t n_used() const { return n_blocks() - n_free(); }

  // Blocks needed to hold `positions` positions.
  int64_t blocks_for(int64_t positions) const { return (positions + block_size_ - 1) / block_size_; }

  // Appends n fresh blocks (reference count 1) to `table`; returns false and
  // changes nothing when fewer than n are free.
  bool allocate(int64_t n, std::vector<int32_t>& table);
  // Adds a holder to a block in use (sharing it).
  void retain(int32_t block);
  // Drops one holder of each block; a block nobody holds becomes free.
  void release(std::span<const int32_t> blocks);

  int32_t ref_count(int32_t block) const;

 private:
  int64_t block_size_;
  std::vector<int32_t> refs_;
  std::vector<int32_t> free_;  // a stack: the most recently freed block is reused first
};

}  // namespace rayo::runtime
