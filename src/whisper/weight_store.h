#pragma once
// The bytes of a CTranslate2 model's variables as rayo's kernels read them:
//  - model.bin packs variables without padding, so many start at odd offsets
//    (an f16 tensor at an odd byte), which the kernels do not accept: the
//    variables not aligned to 64 bytes are copied once into aligned memory,
//    the others are read in place from the mapping (the file's pages of a
//    copied variable are let go, so a model is not resident twice);
//  - with int8 weights (faster-whisper's compute_type="int8"), every weight
//    matrix whose rows are whole blocks of 32 is quantized at load to Q8_0
//    (8-bit values with an f16 scale per 32), the format of rayo's fastest
//    CPU kernels; the vectors (norms, biases, positions) keep their type, and
//    so do a whisper.cpp file's quantized matrices (already 4 to 8 bits);
//  - a CTranslate2 int8 model's matrices (ct2_int8.h) become Q8_0 at load,
//    their 8-bit values kept, whatever the format asked;
//  - once a backend multiplies a matrix from a copy of its own (the CPU's
//    repacked one), this store's copy of it can go (release_copies).
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "common/aligned_buffer.h"
#include "quant/tensor_type.h"
#include "whisper/ct2_model.h"

namespace rayo::whisper {

enum class WeightFormat { AsStored, Int8 };
// faster-whisper's compute_type names: "default" (or float32, float16: as stored, computed in f32) and "int8".
WeightFormat weight_format(const std::string& compute_type);

class WeightStore {
 public:
  // Quantizing (int8) runs on n_threads threads.
  WeightStore(const Ct2Model& model, WeightFormat format, int n_threads = 1);

  // The variable's bytes, 64-byte aligned, in type(v).
  const std::byte* data(const Ct2Variable& v) const;
  // F32, F16, BF16 or a whisper.cpp file's block type as stored, or Q8_0 when quantized here. Throws for other types.
  TensorType type(const Ct2Variable& v) const;
  // Whether those bytes are in the file's mapping (not a copy, nor a model made in memory).
  bool in_file(const Ct2Variable& v) const { return model_.mapped() && !copies_.count(&v); }

  // Lets go of every copy that some pointer in `held` points into (bytes a
  // backend multiplies from a copy of its own) and none in `read` does (bytes
  // something reads as they are): nothing reads it again, and a read by
  // mistake faults (AlignedBuffer::discard). The same for an assembled
  // model's own variables (Ct2Model::discard).
  void release_copies(const std::set<const void*>& held, const std::set<const void*>& read);
  // Bytes of the copies not let go.
  size_t copy_bytes() const;

 private:
  struct Copy {
    AlignedBuffer bytes;
    TensorType type;
    bool released = false;
  };
  const Ct2Model& model_;
  std::map<const Ct2Variable*, Copy> copies_;
  std::set<const Ct2Variable*> released_in_model_;  // an assembled model's variables let go
};

}  // namespace rayo::whisper
