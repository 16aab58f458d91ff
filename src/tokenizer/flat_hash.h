#pragma once
// Small open-addressing hash tables for the tokenizer hot paths (token lookup by
// text, merge lookup by id pair). std::unordered_map chases a pointer per probe;
// these keep the probe sequence in one flat array, which matters when a 10 MB text
// needs tens of millions of lookups.
#include <cstdint>
#include <vector>

namespace rayo::tokenizer {

inline uint64_t mix64(uint64_t x) {
  // splitmix64 finaliser: every input bit affects every output bit.
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

inline size_t table_size_for(size_t n) {
  size_t size = 16;
  while (size < n * 2) size *= 2;
  return size;
}

// uint64 key -> (int32, int32) value. Keys must not be ~0 (the empty marker).
class PairTable {
 public:
  struct Entry {
    uint64_t key = ~0ull;
    int32_t a = 0;
    int32_t b = 0;
  };

  void reserve(size_t n) { rebuild(table_size_for(n)); }

  // Keeps the existing value when the key is present; returns whether it inserted.
  bool insert(uint64_t key, int32_t a, int32_t b) {
    if ((count_ + 1) * 2 > slots_.size()) rebuild(table_size_for(count_ + 1));
    size_t i = mix64(key) & mask_;
    while (slots_[i].key != ~0ull) {
      if (slots_[i].key == key) return false;
      i = (i + 1) & mask_;
    }
    slots_[i] = {key, a, b};
    ++count_;
    return true;
  }

  const Entry* find(uint64_t key) const {
    if (slots_.empty()) return nullptr;
    size_t i = mix64(key) & mask_;
    while (true) {
      const Entry& e = slots_[i];
      if (e.key == key) return &e;
      if (e.key == ~0ull) return nullptr;
      i = (i + 1) & mask_;
    }
  }

  size_t size() const { return count_; }

 private:
  void rebuild(size_t size) {
    std::vector<Entry> old;
    old.swap(slots_);
    slots_.assign(size, Entry{});
    mask_ = size - 1;
    count_ = 0;
    for (const Entry& e : old)
      if (e.key != ~0ull) insert(e.key, e.a, e.b);
  }

  std::vector<Entry> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

}  // namespace rayo::tokenizer
