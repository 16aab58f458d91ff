#include "tokenizer/spm.h"

#include <algorithm>
#include <string>

#include "tokenizer/utf8.h"

namespace rayo::tokenizer {

static constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

SpmModel::SpmModel(const Vocab& vocab, int32_t unk_id) : vocab_(&vocab) {
  static const char* kHex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const std::string hex = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    int32_t id = vocab.find(hex);
    if (id < 0) id = vocab.find(std::string(1, static_cast<char>(b)));
    byte_tokens_[b] = id >= 0 ? id : unk_id;
  }
  for (int b = 0; b < 128; ++b) isolated_[b] = true;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const std::string& text = vocab.at(id).text;
    if (text.size() < 2) continue;
    for (char c : text)
      if (static_cast<uint8_t>(c) < 128) isolated_[static_cast<uint8_t>(c)] = false;
    // "▁" (E2 96 81) allowed only in the token's leading run of them.
    size_t i = 0;
    while (text.compare(i, 3, kSpace) == 0) i += 3;
    if (text.find(kSpace, i) != std::string::npos) split_words_ = false;
  }
}

void SpmModel::encode(std::string_view text, std::vector<int32_t>& out) const {
  WordCache cache;
  encode(text, out, cache);
}

void SpmModel::encode(std::string_view text, std::vector<int32_t>& out, WordCache& cache) const {
  auto encode_word = [&](std::string_view word) {
    if (word.empty()) return;
    if (cache.lookup(word, out)) return;
    const size_t before = out.size();
    encode_segment(word, out);
    cache.store(word, out.data() + before, out.size() - before);
  };
  size_t start = 0;
  // Step by characters as the merge loop cuts them (length from the first byte),
  // so that broken UTF-8 is cut exactly the same way.
  bool after_space = false;  // the previous character was "▁"
  for (size_t i = 0, n = 1; i < text.size(); i += n) {
    const auto c = static_cast<uint8_t>(text[i]);
    n = std::min(utf8_length_from_lead(c), text.size() - i);
    const bool space = n == 3 && text.compare(i, 3, kSpace) == 0;
    if (isolated_[c]) {
      encode_word(text.substr(start, i - start));
      emit(text.substr(i, 1), out);
      start = i + 1;
    } else if (split_words_ && space && !after_space && i > start) {
      // A "▁" run starts here after some other character: a new word.
      encode_word(text.substr(start, i - start));
      start = i;
    }
    after_space = space;
  }
  encode_word(text.substr(start));
}

void SpmModel::emit(std::string_view piece, std::vector<int32_t>& out) const {
  const int32_t id = vocab_->find(piece);
  if (id >= 0) {
    out.push_back(id);
    return;
  }
  for (char c : piece) {
    const int32_t byte_id = byte_tokens_[static_cast<uint8_t>(c)];
    if (byte_id >= 0) out.push_back(byte_id);
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

void SpmModel::encode_segment(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  const Vocab& vocab = *vocab_;
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Bigram> heap;
  symbols.clear();
  heap.clear();
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = std::min(utf8_length_from_lead(static_cast<uint8_t>(text[pos])), text.size() - pos);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, pos + n == text.size() ? -1 : index + 1, static_cast<uint32_t>(pos),
                       static_cast<uint32_t>(n)});
    pos += n;
  }

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

  for (int32_t i = 0; i != -1; i = symbols[i].next) emit(text.substr(symbols[i].begin, symbols[i].size), out);
}

}  // namespace rayo::tokenizer
