#pragma once
// Facts about a GGUF file that `rayo inspect` reports and other tools reuse:
// the quantization mix, the parameter count and a tokenizer summary. All of it
// comes from metadata and tensor infos; no tensor data is read.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "gguf/file.h"

namespace rayo::gguf {

struct TypeUsage {
  TensorType type;
  uint64_t tensors = 0;
  uint64_t bytes = 0;
  uint64_t elements = 0;
};

// Tensors per type, largest share of bytes first.
std::vector<TypeUsage> type_usage(const File& file);

// Total elements of all tensors.
uint64_t parameter_count(const File& file);

struct SpecialToken {
  std::string_view role;                // "bos", "eos", "unk", "pad"
  std::optional<uint64_t> id;           // absent when the file sets none
  std::optional<std::string_view> text; // absent when the id is outside the vocabulary
};

struct TokenizerSummary {
  std::string_view model;  // tokenizer.ggml.model: "llama" (SentencePiece), "gpt2" (byte-level BPE), ...
  std::string_view pre;    // tokenizer.ggml.pre, empty when absent
  uint64_t n_tokens = 0;
  uint64_t n_merges = 0;
  std::vector<SpecialToken> specials;  // bos, eos, unk, pad in that order
  bool has_chat_template = false;
  std::optional<bool> add_bos;
};

// Throws rayo::Error naming the key when a tokenizer key has the wrong type.
TokenizerSummary tokenizer_summary(const File& file);

}  // namespace rayo::gguf
