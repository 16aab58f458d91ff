#include "tokenizer/spm.h"

#include <algorithm>
#include <string>

#include "tokenizer/utf8.h"

namespace rayo::tokenizer {

SpmModel::SpmModel(const Vocab& vocab, int32_t unk_id) : vocab_(&vocab) {
  static const char* kHex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const std::string hex = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    int32_t id = vocab.find(hex);
    if (id < 0) id = vocab.find(std::string(1, static_cast<char>(b)));
    byte_tokens_[b] = id >= 0 ? id : unk_id;
  }
}

namespace {

struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t begin;
  uint32_t size;  // 0 once merged into its left neighbour
};

struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  uint32_t size;
};

// Max-heap order: higher score first, then the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

void SpmModel::encode(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  const Vocab& vocab = *vocab_;
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = std::min(utf8_length_from_lead(static_cast<uint8_t>(text[pos])), text.size() - pos);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, pos + n == text.size() ? -1 : index + 1, static_cast<uint32_t>(pos),
                       static_cast<uint32_t>(n)});
    pos += n;
  }

  std::vector<Bigram> heap;
  heap.reserve(symbols.size());
  const size_t max_bytes = vocab.max_token_bytes();
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const uint32_t size = symbols[left].size + symbols[right].size;
    if (size > max_bytes) return;
    const int32_t id = vocab.find(text.substr(symbols[left].begin, size));
    if (id < 0) return;
    heap.push_back({vocab.at(id).score, left, right, size});
    std::push_heap(heap.begin(), heap.end(), BigramLess{});
  };

  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), BigramLess{});
    const Bigram bigram = heap.back();
    heap.pop_back();
    Symbol& left = symbols[bigram.left];
    Symbol& right = symbols[bigram.right];
    // Stale entry: one side was merged away or grew since the pair was queued.
    if (left.size == 0 || right.size == 0 || left.size + right.size != bigram.size) continue;
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }

  for (int32_t i = 0; i != -1; i = symbols[i].next) {
    const Symbol& s = symbols[i];
    const std::string_view piece = text.substr(s.begin, s.size);
    const int32_t id = vocab.find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      const int32_t byte_id = byte_tokens_[static_cast<uint8_t>(c)];
      if (byte_id >= 0) out.push_back(byte_id);
    }
  }
}

}  // namespace rayo::tokenizer
