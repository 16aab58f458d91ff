#pragma once
// Small hand-made vocabularies for the tokenizer unit tests (no shared data).
#include <string>
#include <vector>

#include "tokenizer/byte_encoding.h"
#include "tokenizer/tokenizer.h"

namespace rayo::tokenizer::test {

// SentencePiece: <unk> <s> </s>, the 256 byte tokens (unless `bytes` is false),
// then `normal` tokens with their scores.
inline TokenizerSpec spm_spec(const std::vector<std::pair<std::string, float>>& normal, bool bytes = true) {
  TokenizerSpec s;
  s.model = "llama";
  auto add = [&](std::string text, float score, int32_t type) {
    s.tokens.push_back(std::move(text));
    s.scores.push_back(score);
    s.token_types.push_back(type);
  };
  add("<unk>", 0, 2);
  add("<s>", 0, 3);
  add("</s>", 0, 3);
  if (bytes) {
    static const char* hex = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) add(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">", 0, 6);
  }
  for (const auto& [text, score] : normal) add(text, score, 1);
  return s;
}

// Byte-level BPE: the 256 byte characters (in byte order), then `merges`
// ("left right", best first) whose results become tokens, then `extra` tokens
// (type 3 = control, 4 = user-defined).
inline TokenizerSpec bpe_spec(const std::string& pre, const std::vector<std::string>& merges,
                              const std::vector<std::pair<std::string, int32_t>>& extra = {}) {
  TokenizerSpec s;
  s.model = "gpt2";
  s.pre = pre;
  for (int b = 0; b < 256; ++b) {
    s.tokens.emplace_back(byte_to_unicode(static_cast<uint8_t>(b)));
    s.token_types.push_back(1);
  }
  for (const std::string& m : merges) {
    s.merges.push_back(m);
    const size_t space = m.find(' ', 1);
    s.tokens.push_back(m.substr(0, space) + m.substr(space + 1));
    s.token_types.push_back(1);
  }
  for (const auto& [text, type] : extra) {
    s.tokens.push_back(text);
    s.token_types.push_back(type);
  }
  return s;
}

// The token texts of `ids`, for readable expectations.
inline std::vector<std::string> texts(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(tok.token_text(id));
  return out;
}

}  // namespace rayo::tokenizer::test
