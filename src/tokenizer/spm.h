#pragma once
// SentencePiece-style BPE as llama.cpp runs it for `tokenizer.ggml.model =
// "llama"`: the text is cut into UTF-8 characters, then the adjacent pair whose
// concatenation is the highest-scoring token is merged, again and again (ties go
// to the leftmost pair). What is left and is not a token is spelt with byte tokens
// <0xNN>; a byte without one becomes the unknown token.
//
// A heap of candidate pairs over a linked list of symbols keeps this O(n log n).
// An ASCII character that appears in no multi-byte token (typically '\n') can
// never be merged, so the text is cut there and the pieces are encoded one by one:
// same result, but the heap stays small and in cache. Likewise, when no token has
// U+2581 after another character (true of LLaMA-style vocabularies), nothing merges
// across the start of a "▁word", so each word is encoded on its own and repeated
// words come from a cache.
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"
#include "tokenizer/word_cache.h"

namespace rayo::tokenizer {

class SpmModel {
 public:
  SpmModel(const Vocab& vocab, int32_t unk_id);

  // Appends the ids of `text` (spaces already replaced by U+2581) to `out`.
  void encode(std::string_view text, std::vector<int32_t>& out) const;
  void encode(std::string_view text, std::vector<int32_t>& out, WordCache& cache) const;

  // Id of the token for one byte: <0xNN>, else the one-byte text, else unknown (-1 if none).
  int32_t byte_token(uint8_t byte) const { return byte_tokens_[byte]; }

 private:
  void encode_segment(std::string_view text, std::vector<int32_t>& out) const;
  void emit(std::string_view piece, std::vector<int32_t>& out) const;

  const Vocab* vocab_;
  std::array<int32_t, 256> byte_tokens_{};
  std::array<bool, 256> isolated_{};  // ASCII bytes no merge can involve
  bool split_words_ = true;            // no token has U+2581 after another character
};

}  // namespace rayo::tokenizer
