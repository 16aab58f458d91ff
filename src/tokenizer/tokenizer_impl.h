#pragma once
// The inside of a Tokenizer (shared by tokenizer.cpp, detokenizer.cpp).
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/spm.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace rayo::tokenizer {

enum class ModelKind { kSpm, kBpe };

struct Tokenizer::Impl {
  ModelKind kind = ModelKind::kSpm;
  std::string model_name;
  std::string pre_name;
  std::string chat_template;
  Vocab vocab;

  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;
  bool clean_spaces = false;
  std::vector<int32_t> eog;  // sorted

  std::unique_ptr<SpmModel> spm;
  std::unique_ptr<PreTokenizer> pre;
  std::unique_ptr<BpeModel> bpe;
  std::unique_ptr<SpecialTokenMatcher> specials;
  std::vector<std::string> pieces;  // token_to_piece(id, special = true)

  std::string piece_uncached(int32_t id) const;
};

// llama.cpp's detokenizer clean-up of spaces before punctuation and contractions.
void clean_up_spaces(std::string& text);

}  // namespace rayo::tokenizer
