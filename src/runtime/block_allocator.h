#pragma once
// Hands out the fixed-size blocks of the paged KV cache (graph/backend.h) to
// sequences. A block holds `block_size` consecutive positions of one sequence;
// a sequence's block table lists its blocks in position order. Blocks are
// reference counted so that several sequences may hold one block (a shared
// prompt prefix, runtime/prefix_cache.h).
//
// A block nobody holds is free, unless it is marked cached: its contents are
// still worth something (a prompt prefix another request may reuse), so it
// waits in a least-recently-released list and is handed out again only when no
// plain free block is left. Reusing a cached block evicts it: the eviction
// callback hears of it first, so that nothing refers to its old contents.
//
// Not thread-safe: the scheduler thread is its only user.
#include <cstdint>
#include <functional>
#include <list>
#include <span>
#include <vector>

namespace rayo::runtime {

class BlockAllocator {
 public:
  BlockAllocator(int64_t n_blocks, int64_t block_size);

  int64_t n_blocks() const { return static_cast<int64_t>(refs_.size()); }
  int64_t block_size() const { return block_size_; }
  // Blocks that allocate() can hand out: the free ones and the cached ones nobody holds.
  int64_t n_free() const { return static_cast<int64_t>(free_.size() + idle_cached_.size()); }
  // Blocks held by at least one sequence.
  int64_t n_used() const { return n_blocks() - n_free(); }
  // Cached blocks nobody holds.
  int64_t n_idle_cached() const { return static_cast<int64_t>(idle_cached_.size()); }

  // Blocks needed to hold `positions` positions.
  int64_t blocks_for(int64_t positions) const { return (positions + block_size_ - 1) / block_size_; }

  // Appends n blocks (reference count 1, not cached) to `table`, free ones
  // first, then evicting the cached blocks released longest ago; returns false
  // and changes nothing when fewer than n are available (n_free()).
  bool allocate(int64_t n, std::vector<int32_t>& table);
  // Adds a holder to a block in use, or to a cached block nobody holds.
  void retain(int32_t block);
  // Drops one holder of each block; a block nobody holds becomes free (or idle, if cached).
  void release(std::span<const int32_t> blocks);

  // Marks a block in use as cached (see above).
  void mark_cached(int32_t block);
  bool cached(int32_t block) const;
  // Called with each cached block just before allocate() hands it out again.
  void on_evict(std::function<void(int32_t)> callback) { on_evict_ = std::move(callback); }

  int32_t ref_count(int32_t block) const;

 private:
  void check(int32_t block) const;

  int64_t block_size_;
  std::vector<int32_t> refs_;
  std::vector<int32_t> free_;  // a stack: the most recently freed block is reused first
  std::vector<bool> cached_;
  std::list<int32_t> idle_cached_;  // cached blocks nobody holds, least recently released first
  std::vector<std::list<int32_t>::iterator> idle_position_;  // per block, valid while it is idle and cached
  std::function<void(int32_t)> on_evict_;
};

}  // namespace rayo::runtime
