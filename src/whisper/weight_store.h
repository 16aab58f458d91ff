#pragma once
// The bytes of a CTranslate2 model's variables as rayo's kernels read them:
// model.bin packs variables without padding, so many start at odd offsets
// (an f16 tensor at an odd byte), which the kernels do not accept. The
// variables that are not aligned to 64 bytes are copied once into aligned
// memory; the others are read in place from the mapping.
#include <cstdint>
#include <map>
#include <string>

#include "common/aligned_buffer.h"
#include "whisper/ct2_model.h"

namespace rayo::whisper {

class WeightStore {
 public:
  explicit WeightStore(const Ct2Model& model);

  // The variable's bytes, 64-byte aligned.
  const std::byte* data(const Ct2Variable& v) const;
  // Whether those bytes are in the file's mapping (not a copy).
  bool in_file(const Ct2Variable& v) const { return !copies_.count(&v); }
  size_t copied_bytes() const { return copied_bytes_; }

 private:
  std::map<const Ct2Variable*, AlignedBuffer> copies_;
  size_t copied_bytes_ = 0;
};

}  // namespace rayo::whisper
