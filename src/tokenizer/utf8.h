#pragma once
// UTF-8 helpers shared by the tokenizers and the detokenizer.
//
// Decoding follows llama.cpp's rules on purpose, because token ids must match
// its output on every input, including broken UTF-8: the length of a character
// is read from the high nibble of its first byte, and each byte that does not
// start a well-formed sequence becomes U+FFFD on its own.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rayo::tokenizer {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Bytes in the character that starts with `lead`, from its high nibble only
// (1 for ASCII and for stray continuation bytes, 2, 3 or 4): llama.cpp's rule for
// cutting text into characters before merging.
inline size_t utf8_length_from_lead(uint8_t lead) {
  static constexpr uint8_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[lead >> 4];
}

void append_utf8(std::string& out, uint32_t codepoint);

// Decodes the character at text[pos] and advances pos. A byte that does not start
// a valid sequence (bad lead byte, missing continuation bytes, overlong form,
// surrogate, or a value above U+10FFFF) yields U+FFFD and advances by one byte.
uint32_t decode_utf8(std::string_view text, size_t& pos);

// Text with every invalid byte replaced by U+FFFD (valid text comes back unchanged).
std::string sanitize_utf8(std::string_view text);
bool is_valid_utf8(std::string_view text);

// Number of bytes at the end of `text` that form the beginning of a character
// whose remaining bytes have not arrived yet (0 to 3). Used by the streaming
// decoder to hold back half characters.
size_t incomplete_utf8_tail(std::string_view text);

}  // namespace rayo::tokenizer
