#include "tokenizer/vocab.h"

#include <algorithm>

#include "common/error.h"

namespace rayo::tokenizer {

uint32_t attr_from_token_type(int64_t token_type) {
  switch (token_type) {
    case 1: return kAttrNormal;
    case 2: return kAttrUnknown;
    case 3: return kAttrControl;
    case 4: return kAttrUserDefined;
    case 5: return kAttrUnused;
    case 6: return kAttrByte;
    default: return kAttrUndefined;
  }
}

size_t StringHash::operator()(std::string_view s) const noexcept {
  // FNV-1a over 8-byte words: token texts are short, and this is on the hot path
  // of every merge lookup.
  uint64_t h = 0xcbf29ce484222325ull ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    __builtin_memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  if (i < s.size()) __builtin_memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * 0x100000001b3ull;
  h ^= h >> 32;
  return static_cast<size_t>(h);
}

void Vocab::add(std::string text, float score, uint32_t attr) {
  const int32_t id = size();
  if (text.empty()) text = cat("[EMPTY_", id, "]");
  auto [it, inserted] = ids_.emplace(text, id);
  if (!inserted) {
    fail("duplicate token in vocabulary: ", quote_for_message(text), " has ids ", it->second,
         " and ", id);
  }
  max_token_bytes_ = std::max(max_token_bytes_, text.size());
  tokens_.push_back(TokenData{std::move(text), score, attr});
}

}  // namespace rayo::tokenizer
