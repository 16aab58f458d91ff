#pragma once
// Byte-level BPE pre-tokenizers, selected by `tokenizer.ggml.pre`: the text is
// cut into words by a chain of regexes (each one re-splits the pieces left by the
// previous one) before BPE merges run inside each word. The regexes and the
// per-name options are llama.cpp's (llama-vocab.cpp), so that the ids match.
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"

namespace rayo::tokenizer {

// Options llama.cpp attaches to a pre-tokenizer name.
struct PreTokenizerOptions {
  bool clean_spaces = true;    // detokenizer removes " ?", " !", " 's"... spaces
  bool ignore_merges = false;  // a word that is a whole token skips merging
  bool add_bos = false;        // default for tokenizer.ggml.add_bos_token
  bool no_bos_token = false;   // the family has no BOS (chatglm)
};

class PreTokenizer {
 public:
  // Throws rayo::Error "unknown pre-tokenizer 'NAME'" for a name llama.cpp does not
  // know (or that rayo does not implement). An empty name means "default".
  explicit PreTokenizer(std::string_view name);

  const std::string& name() const { return name_; }
  const PreTokenizerOptions& options() const { return options_; }

  // Splits valid UTF-8 text into words; the spans cover the text in order.
  std::vector<Span> split(std::string_view text) const;

  // Every name accepted by the constructor.
  static std::vector<std::string> known_names();

 private:
  std::string name_;
  PreTokenizerOptions options_;
  std::vector<SplitRegex> regexes_;
};

}  // namespace rayo::tokenizer
