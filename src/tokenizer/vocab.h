#pragma once
// The token table shared by every tokenizer algorithm: token texts, scores and
// attributes, and the reverse lookup text -> id.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rayo::tokenizer {

// Token attributes, as llama.cpp derives them from `tokenizer.ggml.token_type`
// (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte; anything
// else is "undefined"), plus the lstrip/rstrip flags it sets for some models.
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrLstrip = 1u << 7,
  kAttrRstrip = 1u << 8,
};
uint32_t attr_from_token_type(int64_t token_type);

struct TokenData {
  std::string text;
  float score = 0.0f;
  uint32_t attr = kAttrNormal;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept;
};

class Vocab {
 public:
  // Adds the next token (ids are assigned in order). Empty texts become
  // "[EMPTY_<id>]" as in llama.cpp; a duplicate text is an error.
  void add(std::string text, float score, uint32_t attr);

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  bool contains(int32_t id) const { return id >= 0 && id < size(); }
  const TokenData& at(int32_t id) const { return tokens_.at(static_cast<size_t>(id)); }
  TokenData& mutable_at(int32_t id) { return tokens_.at(static_cast<size_t>(id)); }
  // -1 when no token has this text.
  int32_t find(std::string_view text) const {
    auto it = ids_.find(text);
    return it == ids_.end() ? -1 : it->second;
  }
  size_t max_token_bytes() const { return max_token_bytes_; }

 private:
  std::vector<TokenData> tokens_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids_;
  size_t max_token_bytes_ = 0;
};

}  // namespace rayo::tokenizer
