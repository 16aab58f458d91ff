#pragma once
// Byte-level BPE as llama.cpp runs it for `tokenizer.ggml.model = "gpt2"`. Each
// word from the pre-tokenizer is spelt with GPT-2's byte characters, one symbol
// per byte; then the adjacent pair with the lowest merge rank is merged, again
// and again (ties go to the leftmost pair). A final symbol that is not a token is
// emitted byte by byte, keeping only bytes that are tokens on their own (what
// llama.cpp does; in practice this drops nothing for real vocabularies).
//
// Merges are looked up by (left id, right id) rather than by string: every string
// that appears in a merge gets an id (its token id, or an extra id past the
// vocabulary when it is not a token), so a merge step is one hash lookup.
#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/flat_hash.h"
#include "tokenizer/vocab.h"

namespace rayo::tokenizer {

class BpeModel {
 public:
  // `merges` holds "left right" strings, best (rank 0) first; a merge listed twice
  // keeps its first rank, as in llama.cpp.
  BpeModel(const Vocab& vocab, const std::vector<std::string_view>& merges, bool ignore_merges);

  // Appends the ids of one pre-tokenized word (raw bytes, not yet byte-encoded).
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  size_t n_merges() const { return merges_.size(); }

 private:
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  int32_t intern(std::string_view text);
  void emit_fallback(std::string_view raw, std::vector<int32_t>& out) const;

  const Vocab* vocab_;
  bool ignore_merges_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> extra_ids_;
  int32_t next_extra_id_;
  PairTable merges_;  // key(left, right) -> (rank, id of the merged string)
  std::array<int32_t, 256> byte_ids_{};  // id of each byte's character, -1 if it has none
};

}  // namespace rayo::tokenizer
