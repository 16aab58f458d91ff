#include "whisper/weight_store.h"

#include <cstring>

namespace rayo::whisper {

WeightStore::WeightStore(const Ct2Model& model) {
  for (const Ct2Variable& v : model.variables()) {
    if (reinterpret_cast<uintptr_t>(v.bytes.data()) % 64 == 0 || v.bytes.empty()) continue;
    AlignedBuffer copy(v.bytes.size(), 64);
    std::memcpy(copy.data(), v.bytes.data(), v.bytes.size());
    copied_bytes_ += v.bytes.size();
    copies_.emplace(&v, std::move(copy));
  }
}

const std::byte* WeightStore::data(const Ct2Variable& v) const {
  const auto it = copies_.find(&v);
  return it != copies_.end() ? it->second.data() : reinterpret_cast<const std::byte*>(v.bytes.data());
}

}  // namespace rayo::whisper
