#include "tokenizer/vocab.h"

#include <algorithm>

#include "common/error.h"
#include "tokenizer/flat_hash.h"

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
  // 8 bytes at a time, then a strong finaliser: token texts are short, and this
  // is on the hot path of every merge.
  uint64_t h = 0x9e3779b97f4a7c15ull ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    __builtin_memcpy(&w, s.data() + i, 8);
    h = mix64(h ^ w);
  }
  uint64_t tail = 0;
  if (i < s.size()) __builtin_memcpy(&tail, s.data() + i, s.size() - i);
  return static_cast<size_t>(mix64(h ^ tail));
}

void Vocab::add(std::string text, float score, uint32_t attr) {
  const int32_t id = size();
  if (text.empty()) text = cat("[EMPTY_", id, "]");
  if (const int32_t other = find(text); other >= 0) {
    fail("duplicate token in vocabulary: ", quote_for_message(text), " has ids ", other, " and ", id);
  }
  max_token_bytes_ = std::max(max_token_bytes_, text.size());
  tokens_.push_back(TokenData{std::move(text), score, attr});
  if (tokens_.size() * 2 > slots_.size()) {
    slots_.assign(table_size_for(tokens_.size()), Slot{});
    mask_ = slots_.size() - 1;
    for (int32_t i = 0; i < size(); ++i) insert_slot(i);
  } else {
    insert_slot(id);
  }
}

void Vocab::insert_slot(int32_t id) {
  const uint64_t h = StringHash{}(tokens_[static_cast<size_t>(id)].text);
  size_t i = h & mask_;
  while (slots_[i].id >= 0) i = (i + 1) & mask_;
  slots_[i] = {id, static_cast<uint32_t>(h >> 32)};
}

}  // namespace rayo::tokenizer
