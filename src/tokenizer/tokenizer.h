#pragma once
// rayo's tokenizer: text <-> token ids, exactly as llama.cpp computes them, from
// the vocabulary stored in a GGUF file (`tokenizer.ggml.*`).
//
//   auto tok = Tokenizer::from_gguf(file);
//   std::vector<int32_t> ids = tok.encode("Hello", /*add_special=*/true, /*parse_special=*/false);
//   std::string text = tok.decode(ids, /*special=*/false);
//
// Supported: SentencePiece-style vocabularies ("llama") and byte-level BPE
// ("gpt2") with llama.cpp's pre-tokenizers (see pre_tokenizer.cpp for the names).
// A Tokenizer is immutable and cheap to copy; use it from any number of threads.
//
// Input that is not valid UTF-8 never fails: SentencePiece spells such bytes with
// byte tokens; byte-level BPE first replaces each invalid byte by U+FFFD, as
// llama.cpp does. A character with no token of its own and no byte token becomes
// the unknown token (SentencePiece; skipped if there is none).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer_spec.h"

namespace rayo::gguf {
class File;
}

namespace rayo::tokenizer {

class Tokenizer {
 public:
  // Reads `tokenizer.ggml.*`; needs no tensors (vocabulary-only files work).
  // Throws rayo::Error for a missing or malformed vocabulary, an unknown model
  // or an unknown pre-tokenizer (naming it).
  static Tokenizer from_gguf(const gguf::File& file);
  static Tokenizer from_spec(const TokenizerSpec& spec);

  // add_special: BOS / EOS as the vocabulary asks (add_bos(), add_eos()).
  // parse_special: control tokens written in the text ("<|im_start|>") become
  // their ids; when off they are tokenized as plain text. User-defined tokens are
  // matched either way, as in llama.cpp.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes of one token. Control and unknown tokens give "" unless `special`.
  std::string token_to_piece(int32_t id, bool special) const;
  // The bytes of a sequence, as llama.cpp's detokenizer gives them: the leading
  // space SentencePiece adds is removed from the first token, and vocabularies
  // that ask for it get llama.cpp's space clean-up (" ," -> ",", " 's" -> "'s"...).
  std::string decode(std::span<const int32_t> ids, bool special) const;

  int32_t n_vocab() const;
  int32_t bos() const;  // -1 when the vocabulary has none
  int32_t eos() const;
  int32_t eot() const;
  int32_t unk() const;
  bool add_bos() const;
  bool add_eos() const;
  // End of generation: eos, eot, eom and the tokens llama.cpp recognises by text
  // (<|im_end|>, <|eot_id|>, <|endoftext|>, <end_of_turn>, ...).
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const;  // sorted

  const std::string& model_name() const;  // tokenizer.ggml.model: "llama" or "gpt2"
  const std::string& pre_name() const;    // pre-tokenizer ("default" for SentencePiece)
  const std::string& chat_template() const;  // tokenizer.chat_template, or ""
  const std::string& token_text(int32_t id) const;  // as stored in the vocabulary
  bool is_control(int32_t id) const;  // control or unknown: hidden unless `special`
  // Leading space of the first piece is dropped by decode()/the streaming decoder.
  bool strips_leading_space() const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// Turns tokens into text as they are generated, never emitting half a UTF-8
// character: bytes of an incomplete character are held until the rest arrives.
// The concatenated output equals the concatenated pieces (with decode()'s
// first-token space removal), without decode()'s space clean-up, which needs to
// see the following tokens.
class StreamingDecoder {
 public:
  // at_sequence_start: the tokens begin a sequence, so a SentencePiece leading
  // space is removed as decode() does; false when they continue a prompt.
  StreamingDecoder(const Tokenizer& tokenizer, bool special, bool at_sequence_start = true);
  // Text that is complete after this token (possibly empty).
  std::string push(int32_t id);
  // Whatever is held back (an incomplete character at the very end), then resets.
  std::string finish();

 private:
  const Tokenizer* tokenizer_;
  bool special_;
  bool at_sequence_start_;
  bool first_;
  std::string pending_;
};

}  // namespace rayo::tokenizer
