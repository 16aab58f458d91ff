#pragma once
// The token table shared by every tokenizer algorithm: token texts, scores and
// attributes, and the reverse lookup text -> id.
#include <cstdint>
#include <string>
#include <string_view>
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
    if (slots_.empty()) return -1;
    const uint64_t h = StringHash{}(text);
    const uint32_t tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.tag == tag && tokens_[static_cast<size_t>(s.id)].text == text) return s.id;
    }
  }
  size_t max_token_bytes() const { return max_token_bytes_; }

 private:
  // Open addressing over token ids; `tag` holds the high hash bits so that most
  // probes need no string compare.
  struct Slot {
    int32_t id = -1;
    uint32_t tag = 0;
  };
  void insert_slot(int32_t id);

  std::vector<TokenData> tokens_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t max_token_bytes_ = 0;
};

}  // namespace rayo::tokenizer
