#include "tokenizer/byte_encoding.h"

#include <array>

#include "tokenizer/utf8.h"

namespace rayo::tokenizer {
namespace {

bool maps_to_itself(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct ByteTables {
  std::array<uint32_t, 256> codepoint{};
  std::array<std::string, 256> utf8;
  std::array<int16_t, 512> byte_of{};  // every mapped codepoint is below 0x144

  ByteTables() {
    byte_of.fill(-1);
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      codepoint[b] = maps_to_itself(b) ? b : 256 + next++;
      append_utf8(utf8[b], codepoint[b]);
      byte_of[codepoint[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteTables& tables() {
  static const ByteTables t;
  return t;
}

}  // namespace

std::string_view byte_to_unicode(uint8_t byte) { return tables().utf8[byte]; }

int unicode_to_byte(uint32_t codepoint) {
  return codepoint < 512 ? tables().byte_of[codepoint] : -1;
}

std::string encode_bytes(std::string_view raw) {
  const ByteTables& t = tables();
  std::string out;
  out.reserve(raw.size() * 2);
  for (char c : raw) out += t.utf8[static_cast<uint8_t>(c)];
  return out;
}

std::string decode_bytes(std::string_view spelled) {
  std::string out;
  out.reserve(spelled.size());
  for (size_t pos = 0; pos < spelled.size();) {
    const size_t start = pos;
    const int byte = unicode_to_byte(decode_utf8(spelled, pos));
    if (byte >= 0)
      out += static_cast<char>(byte);
    else
      out.append(spelled.substr(start, pos - start));
  }
  return out;
}

}  // namespace rayo::tokenizer
