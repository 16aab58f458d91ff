#pragma once
// Everything a Tokenizer is built from, in plain values: what the GGUF keys
// `tokenizer.ggml.*` (and `general.name`) hold. from_gguf() fills one from a file;
// tests fill one by hand. Absent optional values mean "llama.cpp's default".
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rayo::tokenizer {

struct TokenizerSpec {
  std::string model;  // tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2" (byte-level BPE)
  std::string pre;    // tokenizer.ggml.pre (BPE only; empty = "default")
  std::vector<std::string> tokens;
  std::vector<float> scores;         // empty = all 0
  std::vector<int32_t> token_types;  // empty = all normal
  std::vector<std::string> merges;   // BPE: "left right", rank order

  std::optional<int64_t> bos_id, eos_id, eot_id, eom_id, unk_id, sep_id, pad_id;
  std::optional<int64_t> fim_pre_id, fim_suf_id, fim_mid_id, fim_pad_id, fim_rep_id, fim_sep_id;
  std::optional<bool> add_bos, add_eos, add_space_prefix;

  std::string chat_template;  // tokenizer.chat_template
  std::string general_name;   // general.name (llama.cpp keys a few token attributes on it)
};

}  // namespace rayo::tokenizer
