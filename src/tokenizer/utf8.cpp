#include "tokenizer/utf8.h"

namespace rayo::tokenizer {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t decode_utf8(std::string_view text, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(pos);
  if (lead < 0x80) {
    ++pos;
    return lead;
  }
  size_t n = 0;
  uint32_t cp = 0;
  uint32_t min = 0;
  if ((lead & 0xE0) == 0xC0) {
    n = 2, cp = lead & 0x1F, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    n = 3, cp = lead & 0x0F, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    n = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    ++pos;
    return kReplacementChar;
  }
  if (pos + n > text.size()) {
    ++pos;
    return kReplacementChar;
  }
  for (size_t i = 1; i < n; ++i) {
    const uint8_t c = byte(pos + i);
    if ((c & 0xC0) != 0x80) {
      ++pos;
      return kReplacementChar;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  // llama.cpp accepts overlong forms and surrogates; we replace them too, so that
  // what reaches the regex engine is always valid UTF-8.
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++pos;
    return kReplacementChar;
  }
  pos += n;
  return cp;
}

bool is_valid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    if (decode_utf8(text, pos) == kReplacementChar) {
      // A genuine U+FFFD is three bytes long; a replacement advances by one.
      if (pos - start != 3) return false;
    }
  }
  return true;
}

std::string sanitize_utf8(std::string_view text) {
  // Fast path: almost all text is valid and is copied unchanged.
  size_t pos = 0;
  bool valid = true;
  while (pos < text.size() && valid) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const size_t start = pos;
    valid = !(decode_utf8(text, pos) == kReplacementChar && pos - start != 3);
  }
  if (valid) return std::string(text);

  std::string out;
  out.reserve(text.size() + 16);
  pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const uint32_t cp = decode_utf8(text, pos);
    if (cp == kReplacementChar && pos - start != 3) {
      append_utf8(out, kReplacementChar);
    } else {
      out.append(text.substr(start, pos - start));
    }
  }
  return out;
}

size_t incomplete_utf8_tail(std::string_view text) {
  // Look back over at most 3 bytes for a lead byte whose sequence is cut short.
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const uint8_t c = static_cast<uint8_t>(text[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    size_t need = 0;
    if ((c & 0xE0) == 0xC0) need = 2;
    else if ((c & 0xF0) == 0xE0) need = 3;
    else if ((c & 0xF8) == 0xF0) need = 4;
    return need > back ? back : 0;
  }
  return 0;
}

}  // namespace rayo::tokenizer
