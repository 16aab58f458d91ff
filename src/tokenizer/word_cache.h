#pragma once
// Remembers the ids of words already encoded during one encode() call. Natural
// text repeats its words (Zipf), and a word always encodes to the same ids, so a
// long text needs the merge loop only for its distinct words. The keys are views
// into the text being encoded: a cache lives no longer than that call.
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/flat_hash.h"
#include "tokenizer/vocab.h"

namespace rayo::tokenizer {

class WordCache {
 public:
  // Appends the cached ids of `word` to `out`; false when the word is not cached.
  bool lookup(std::string_view word, std::vector<int32_t>& out) const {
    if (slots_.empty()) return false;
    const uint64_t h = StringHash{}(word);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.word.data() == nullptr) return false;
      if (s.hash == h && s.word == word) {
        out.insert(out.end(), ids_.begin() + s.offset, ids_.begin() + s.offset + s.count);
        return true;
      }
    }
  }

  void store(std::string_view word, const int32_t* ids, size_t count) {
    if (count_ >= kMaxWords || word.size() > kMaxWordBytes) return;
    if ((count_ + 1) * 2 > slots_.size()) grow();
    const uint64_t h = StringHash{}(word);
    size_t i = h & mask_;
    while (slots_[i].word.data() != nullptr) {
      if (slots_[i].hash == h && slots_[i].word == word) return;
      i = (i + 1) & mask_;
    }
    slots_[i] = {word, h, static_cast<uint32_t>(ids_.size()), static_cast<uint32_t>(count)};
    ids_.insert(ids_.end(), ids, ids + count);
    ++count_;
  }

 private:
  static constexpr size_t kMaxWords = 1 << 18;
  static constexpr size_t kMaxWordBytes = 256;
  struct Slot {
    std::string_view word;
    uint64_t hash = 0;
    uint32_t offset = 0;
    uint32_t count = 0;
  };
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.word.data() == nullptr) continue;
      size_t i = s.hash & mask_;
      while (slots_[i].word.data() != nullptr) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::vector<int32_t> ids_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

}  // namespace rayo::tokenizer
