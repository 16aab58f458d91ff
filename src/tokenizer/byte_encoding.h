#pragma once
// GPT-2's reversible byte <-> Unicode map. Byte-level BPE vocabularies store
// tokens as text in which every byte is replaced by a printable character:
// bytes that are printable Latin-1 ('!'..'~', '¡'..'¬', '®'..'ÿ') map to
// themselves, the other 68 bytes to U+0100 onwards in byte order (so ' ' -> 'Ġ',
// '\n' -> 'Ċ').
#include <cstdint>
#include <string>
#include <string_view>

namespace rayo::tokenizer {

// UTF-8 text of the character that stands for `byte` (1 or 2 bytes long).
std::string_view byte_to_unicode(uint8_t byte);

// The byte that `codepoint` stands for, or -1 when it stands for none.
int unicode_to_byte(uint32_t codepoint);

// Replaces every byte of `raw` by its character.
std::string encode_bytes(std::string_view raw);
// The inverse: each character by its byte; a character that stands for no byte
// is kept as its UTF-8 (text not spelled byte-level passes through).
std::string decode_bytes(std::string_view spelled);

}  // namespace rayo::tokenizer
