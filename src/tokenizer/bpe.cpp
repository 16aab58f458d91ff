#include "tokenizer/bpe.h"

#include <algorithm>
#include <string>

#include "tokenizer/byte_encoding.h"

namespace rayo::tokenizer {

BpeModel::BpeModel(const Vocab& vocab, const std::vector<std::string_view>& merges, bool ignore_merges)
    : vocab_(&vocab), ignore_merges_(ignore_merges), next_extra_id_(vocab.size()) {
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string_view merge = merges[rank];
    // Split at the first space after the first character, as llama.cpp does; a
    // merge without one pairs two empty strings and can never apply.
    const size_t space = merge.size() > 1 ? merge.find(' ', 1) : std::string_view::npos;
    if (space == std::string_view::npos) continue;
    const std::string_view left = merge.substr(0, space);
    const std::string_view right = merge.substr(space + 1);
    const int32_t a = intern(left);
    const int32_t b = intern(right);
    const int32_t result = intern(std::string(left) + std::string(right));
    merges_.insert(key(a, b), static_cast<int32_t>(rank), result);
  }
  for (int b = 0; b < 256; ++b) {
    const std::string_view text = byte_to_unicode(static_cast<uint8_t>(b));
    int32_t id = vocab.find(text);
    if (id < 0) {
      auto it = extra_ids_.find(text);
      id = it == extra_ids_.end() ? -1 : it->second;
    }
    byte_ids_[b] = id;
  }
}

int32_t BpeModel::intern(std::string_view text) {
  const int32_t id = vocab_->find(text);
  if (id >= 0) return id;
  auto it = extra_ids_.find(text);
  if (it != extra_ids_.end()) return it->second;
  extra_ids_.emplace(std::string(text), next_extra_id_);
  return next_extra_id_++;
}

void BpeModel::emit_fallback(std::string_view raw, std::vector<int32_t>& out) const {
  // llama.cpp looks up each byte of the byte-encoded text as a one-byte token.
  for (char c : raw) {
    for (char e : byte_to_unicode(static_cast<uint8_t>(c))) {
      const int32_t id = vocab_->find(std::string_view(&e, 1));
      if (id >= 0) out.push_back(id);
    }
  }
}

namespace {

struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t begin;
  uint32_t size;  // raw bytes; 0 once merged into its left neighbour
  int32_t id;     // id of its byte-encoded text, -1 when it has none
};

struct Bigram {
  int32_t rank;
  int32_t left;
  int32_t right;
  int32_t left_id;
  int32_t right_id;
  int32_t result;
};

// Max-heap order: lowest rank first, then the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

struct Scratch {
  std::vector<Symbol> symbols;
  std::vector<Bigram> heap;
  std::string encoded;
};

}  // namespace

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  const Vocab& vocab = *vocab_;
  if (ignore_merges_) {
    thread_local std::string encoded;
    encoded.clear();
    for (char c : word) encoded += byte_to_unicode(static_cast<uint8_t>(c));
    const int32_t id = vocab.find(encoded);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  if (word.size() == 1) {
    const int32_t id = byte_ids_[static_cast<uint8_t>(word[0])];
    if (id >= 0 && id < vocab.size()) out.push_back(id);
    else emit_fallback(word, out);
    return;
  }

  thread_local Scratch scratch;
  std::vector<Symbol>& symbols = scratch.symbols;
  std::vector<Bigram>& heap = scratch.heap;
  symbols.clear();
  heap.clear();
  const auto n = static_cast<int32_t>(word.size());
  for (int32_t i = 0; i < n; ++i) {
    symbols.push_back({i - 1, i + 1 == n ? -1 : i + 1, static_cast<uint32_t>(i), 1,
                       byte_ids_[static_cast<uint8_t>(word[i])]});
  }

  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t a = symbols[left].id;
    const int32_t b = symbols[right].id;
    if (a < 0 || b < 0) return;
    const PairTable::Entry* merge = merges_.find(key(a, b));
    if (!merge) return;
    heap.push_back({merge->a, left, right, a, b, merge->b});
    std::push_heap(heap.begin(), heap.end(), BigramLess{});
  };
  for (int32_t i = 1; i < n; ++i) try_add(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), BigramLess{});
    const Bigram bigram = heap.back();
    heap.pop_back();
    Symbol& left = symbols[bigram.left];
    Symbol& right = symbols[bigram.right];
    // Stale entry: one side was merged away or changed since the pair was queued.
    if (left.size == 0 || right.size == 0 || left.id != bigram.left_id || right.id != bigram.right_id) {
      continue;
    }
    left.size += right.size;
    left.id = bigram.result;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }

  for (int32_t i = 0; i != -1; i = symbols[i].next) {
    const Symbol& s = symbols[i];
    if (s.id >= 0 && s.id < vocab.size()) out.push_back(s.id);
    else emit_fallback(word.substr(s.begin, s.size), out);
  }
}

}  // namespace rayo::tokenizer
