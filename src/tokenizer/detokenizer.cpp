// Token ids -> bytes, following llama.cpp's token_to_piece and detokenize.
#include <cstdio>

#include "common/error.h"
#include "tokenizer/byte_encoding.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace rayo::tokenizer {
namespace {

constexpr uint32_t kHiddenAttrs = kAttrControl | kAttrUnknown;

// "▁" -> " " (SentencePiece).
std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
      out += ' ';
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// GPT-2 byte characters -> bytes. A character outside the map is shown as
// llama.cpp shows it: "[UNK_BYTE_0x<hex of the character><token text>]".
std::string decode_byte_level(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const uint32_t cp = decode_utf8(text, pos);
    const int byte = unicode_to_byte(cp);
    if (byte >= 0) {
      out += static_cast<char>(byte);
      continue;
    }
    std::string utf8;
    append_utf8(utf8, cp);
    out += "[UNK_BYTE_0x";
    for (char c : utf8) {
      char hex[3];
      std::snprintf(hex, sizeof hex, "%02x", static_cast<uint8_t>(c));
      out += hex;
    }
    out += text;
    out += "]";
  }
  return out;
}

uint8_t byte_of_token(std::string_view text) {
  // "<0xNN>"; anything else is not a byte token (llama.cpp would read garbage).
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return 0;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return 0;
  };
  return static_cast<uint8_t>(hex(text[3]) * 16 + hex(text[4]));
}

}  // namespace

std::string Tokenizer::Impl::piece_uncached(int32_t id) const {
  const TokenData& token = vocab.at(id);
  if (token.attr & (kHiddenAttrs | kAttrUserDefined)) return token.text;
  if (token.attr & kAttrNormal) {
    return kind == ModelKind::kSpm ? unescape_spaces(token.text) : decode_byte_level(token.text);
  }
  if (token.attr & kAttrByte) return std::string(1, static_cast<char>(byte_of_token(token.text)));
  return {};  // unused / undefined tokens print nothing
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
  const Impl& t = *impl_;
  if (!t.vocab.contains(id)) fail("token id ", id, " is out of range (vocabulary of ", n_vocab(), ")");
  if (!special && (t.vocab.at(id).attr & kHiddenAttrs)) return {};
  return t.pieces[static_cast<size_t>(id)];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool special) const {
  const Impl& t = *impl_;
  std::string text;
  bool remove_space = t.add_space_prefix;
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, special);
    if (remove_space && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    remove_space = false;
    text += piece;
  }
  if (t.clean_spaces) clean_up_spaces(text);
  return text;
}

void clean_up_spaces(std::string& s) {
  // A literal port of the three passes in llama.cpp's detokenize(), which read
  // and write the same buffer; keeping their exact shape keeps their quirks.
  char* text = s.data();
  int32_t total = static_cast<int32_t>(s.size());

  // " ?", " !", " .", " ," -> drop the space.
  const int32_t total1 = total;
  total = total ? 1 : 0;
  for (int32_t i = 1; i < total1; ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) total--;
    text[total++] = x;
  }

  // " ' " -> "'".
  const int32_t total2 = total;
  total = total ? 1 : 0;
  for (int32_t i = 1; i < total2; ++i) {
    const char x = text[i];
    if (x == '\'' && i + 1 < total2 && text[i - 1] == ' ' && text[i + 1] == ' ') {
      total--;
      text[++i] = '\0';
    }
    text[total++] = x;
  }

  // " 's", " 'm", " 're", " 've" -> drop the space (not " 't", " 'd", " 'll").
  const int32_t total3 = total;
  total = total ? 1 : 0;
  for (int32_t i = 1; i < total3; ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && x == '\'' && i + 1 < total3) {
      const char x1 = text[i + 1];
      if (x1 == 's' || x1 == 'm') {
        total--;
      } else if (x1 != 't' && x1 != 'd' && i + 2 < total3) {
        const char x2 = text[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) total--;
      }
    }
    text[total++] = x;
  }
  s.resize(static_cast<size_t>(total));
}

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool special, bool at_sequence_start)
    : tokenizer_(&tokenizer), special_(special), at_sequence_start_(at_sequence_start), first_(at_sequence_start) {}

std::string StreamingDecoder::push(int32_t id) {
  std::string piece = tokenizer_->token_to_piece(id, special_);
  if (first_ && tokenizer_->strips_leading_space() && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
  first_ = false;
  pending_ += piece;
  const size_t keep = incomplete_utf8_tail(pending_);
  std::string ready = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return ready;
}

std::string StreamingDecoder::finish() {
  std::string rest;
  rest.swap(pending_);
  first_ = at_sequence_start_;
  return rest;
}

}  // namespace rayo::tokenizer
