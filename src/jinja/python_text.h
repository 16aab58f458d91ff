#pragma once
// Text rules of the Python runtime that Hugging Face renders chat templates with:
// strings are sequences of code points (len, slicing and find count code points,
// not bytes), floats print as Python's shortest round-trip repr, and containers
// print their strings with Python's quoting. Templates are judged byte for byte
// against that output, so these rules are reproduced exactly where they matter.
#include <cstdint>
#include <string>
#include <string_view>

namespace rayo::jinja {

// UTF-8 to code points. Invalid bytes map to U+DC80..U+DCFF (like Python's
// surrogateescape) so that encode_utf8(decode_utf8(s)) == s for any input.
std::u32string decode_utf8(std::string_view s);
std::string encode_utf8(std::u32string_view s);
void append_utf8(std::string& out, char32_t c);

// Number of code points (Python len()).
size_t code_point_count(std::string_view s);
bool is_ascii(std::string_view s);

// Python str.isspace() for one code point.
bool is_python_space(char32_t c);

// repr(float) / str(float): "1.0", "0.1", "1e+16", "1.5e-05", "inf", "nan".
std::string python_float_repr(double v);

// repr(str): 'text' with Python's choice of quotes and escapes.
std::string python_string_repr(std::string_view s);

// str.upper()/lower() with simple case mapping for ASCII, Latin-1, Latin
// Extended-A, Greek and Cyrillic; other code points pass through unchanged.
std::string python_upper(std::string_view s);
std::string python_lower(std::string_view s);
// Python str.title() and str.capitalize() with the same case rules.
std::string python_title(std::string_view s);
std::string python_capitalize(std::string_view s);

}  // namespace rayo::jinja
