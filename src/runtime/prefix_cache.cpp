#include "runtime/prefix_cache.h"

#include "common/error.h"

namespace rayo::runtime {

size_t PrefixCache::KeyHash::operator()(const Key& k) const {
  // FNV-1a over the parent id and the tokens; equality still compares the tokens.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xff)) * 1099511628211ull;
  };
  mix(k.parent);
  for (int32_t t : k.tokens) mix(static_cast<uint32_t>(t));
  return static_cast<size_t>(h);
}

PrefixCache::PrefixCache(int64_t block_size) : block_size_(block_size) {
  if (block_size <= 0) fail("KV cache blocks need a positive size, got ", block_size);
}

std::vector<PrefixCache::Hit> PrefixCache::lookup(std::span<const int32_t> tokens, int64_t max_blocks) const {
  std::vector<Hit> hits;
  Key key{kRoot, {}};
  const auto bs = static_cast<size_t>(block_size_);
  for (int64_t i = 0; i < max_blocks && (static_cast<size_t>(i) + 1) * bs <= tokens.size(); ++i) {
    key.tokens.assign(tokens.begin() + i * block_size_, tokens.begin() + (i + 1) * block_size_);
    const auto it = entries_.find(key);
    if (it == entries_.end()) break;
    hits.push_back({it->second.block, it->second.id});
    key.parent = it->second.id;
  }
  return hits;
}

uint64_t PrefixCache::insert(uint64_t parent, std::span<const int32_t> block_tokens, int32_t block, bool* inserted) {
  RAYO_CHECK(static_cast<int64_t>(block_tokens.size()) == block_size_, "a prefix block of ", block_tokens.size(),
             " tokens");
  Key key{parent, std::vector<int32_t>(block_tokens.begin(), block_tokens.end())};
  const auto it = entries_.find(key);
  if (it != entries_.end()) {
    *inserted = false;
    return it->second.id;
  }
  RAYO_CHECK(!key_of_block_.count(block), "block ", block, " is already indexed");
  const uint64_t id = next_id_++;
  key_of_block_.emplace(block, key);
  entries_.emplace(std::move(key), Entry{id, block});
  *inserted = true;
  return id;
}

void PrefixCache::forget(int32_t block) {
  const auto it = key_of_block_.find(block);
  if (it == key_of_block_.end()) return;
  entries_.erase(it->second);
  key_of_block_.erase(it);
}

}  // namespace rayo::runtime
