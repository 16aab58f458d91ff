#pragma once
// Reads a binary file's bytes front to back, bounds-checking every read first,
// so that a truncated or malformed file is refused in one line naming the file,
// what was being read and the offset, never read past its end. Values are
// little-endian, like the hosts rayo runs on.
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "common/error.h"

namespace rayo {

class ByteReader {
 public:
  // `path` names the file in errors; both must outlive the reader.
  ByteReader(const std::string& path, std::span<const uint8_t> bytes) : path_(path), bytes_(bytes) {}

  uint64_t offset() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }
  bool at_end() const { return pos_ == bytes_.size(); }

  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::span<const uint8_t> take(uint64_t n, const char* what) {
    need(n, what);
    const auto out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

  // Throws "PATH: ARGS (at offset AT)".
  template <typename... Args>
  [[noreturn]] void error(uint64_t at, Args&&... args) const {
    fail(path_, ": ", std::forward<Args>(args)..., " (at offset ", at, ")");
  }

 private:
  void need(uint64_t n, const char* what) const {
    if (n > remaining()) error(pos_, "truncated: ", what, " needs ", n, " bytes, ", remaining(), " left");
  }

  const std::string& path_;
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
};

}  // namespace rayo
