#pragma once
// An index of the KV cache blocks that hold whole blocks of prompt tokens, so
// that a request whose prompt starts like an earlier one reuses those blocks
// instead of computing them again (automatic prefix caching, as in vLLM).
//
// A block's contents depend on every token before it, so an entry is keyed by
// the chain it continues and its own tokens: (id of the entry for the tokens
// before it, the block's tokens). Ids are never reused, so when a block is
// evicted (forget()), the entries that continued it can no longer be reached
// and nothing can match stale contents. Keys hold the tokens themselves, so a
// lookup never trusts a hash alone.
//
// Only whole blocks inside a prompt are indexed: they are written once, by
// the prefill that computes them, and never again (generation writes later
// positions), so sharing them needs no copy-on-write.
//
// Not thread-safe: the scheduler thread is its only user.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace rayo::runtime {

class PrefixCache {
 public:
  explicit PrefixCache(int64_t block_size);

  // The chain of the empty prefix.
  static constexpr uint64_t kRoot = 0;

  struct Hit {
    int32_t block;
    uint64_t chain;  // the entry's id: the chain to continue
  };
  // The indexed blocks holding tokens[0, n * block_size) for the largest n <=
  // max_blocks, in order.
  std::vector<Hit> lookup(std::span<const int32_t> tokens, int64_t max_blocks) const;

  // Records that `block` holds `block_tokens` (block_size of them) after the
  // chain `parent`. Returns the chain id of those contents; when they were
  // already indexed (under another block), that entry's id, and `block` is not
  // recorded (*inserted = false).
  uint64_t insert(uint64_t parent, std::span<const int32_t> block_tokens, int32_t block, bool* inserted);

  // The block is being reused for other contents: drop its entry.
  void forget(int32_t block);

  int64_t size() const { return static_cast<int64_t>(entries_.size()); }

 private:
  struct Key {
    uint64_t parent;
    std::vector<int32_t> tokens;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Entry {
    uint64_t id;
    int32_t block;
  };

  int64_t block_size_;
  uint64_t next_id_ = kRoot + 1;
  std::unordered_map<Key, Entry, KeyHash> entries_;
  std::unordered_map<int32_t, Key> key_of_block_;
};

}  // namespace rayo::runtime
