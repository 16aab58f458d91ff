#pragma once
// Small string helpers. (g++ 12 has no std::format.)
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace rayo {

// Concatenates anything streamable: cat("layer ", 3, ": ", name).
template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// "4.87 GiB", "123.0 MiB", "512 B".
std::string format_bytes(uint64_t bytes);

// Thousands separators for large counts: 1234567 -> "1,234,567".
std::string format_count(uint64_t n);

// Quotes a string for an error message, escaping control bytes and showing at most
// max_len bytes, so that hostile input cannot produce a multi-line error.
std::string quote_for_message(std::string_view s, size_t max_len = 80);

std::vector<std::string> split(std::string_view s, char sep);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);

}  // namespace rayo
