#pragma once
// CTranslate2's model.bin, as faster-whisper's users have it: a header, then
// every variable (name, shape, element type, raw little-endian row-major bytes)
// one after another, then aliases (a name standing for another variable:
// Whisper's output projection is its token embedding). The whole file is
// checked when it is opened, so that a truncated or malformed file is refused
// in one line naming the offset, before anything reads a weight; variables
// are views into the mapped file (only some start 4-byte aligned).
//
// Layout (binary version 6): u32 version; the spec name (u16 length counting a
// trailing NUL, the bytes, the NUL); u32 revision; u32 variable count; per
// variable: its name (same form), u8 rank, rank u32 dims, u8 type, u32 byte
// count, the bytes; u32 alias count; per alias its name and its target's.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/aligned_buffer.h"
#include "common/mapped_file.h"
#include "quant/tensor_type.h"

namespace rayo::whisper {

// model.bin's element types, and one of rayo's own: Blocks, never in a
// model.bin, is a matrix of a whisper.cpp file kept in ggml's block format
// (Q4_0 ... Q8_0, the k-quants; Ct2Variable::blocks says which), so that a
// quantized model runs as stored instead of four times its size in f32.
enum class Ct2Type : uint8_t { F32 = 0, I8 = 1, I16 = 2, I32 = 3, F16 = 4, BF16 = 5, Blocks = 255 };
std::string_view ct2_type_name(Ct2Type t);  // "float32", "int8", ... as CTranslate2 names them
size_t ct2_type_size(Ct2Type t);            // 0 for Blocks, whose size is per block

struct Ct2Variable {
  std::string name;
  std::vector<uint32_t> shape;  // outermost first; empty for a scalar
  Ct2Type type = Ct2Type::F32;
  TensorType blocks = TensorType::F32;  // the block type, when type is Blocks (each row whole blocks)
  uint64_t offset = 0;          // of the first byte, in the file (0 in an assembled model)
  std::span<const uint8_t> bytes;

  uint64_t elements() const;
};

// A variable of an assembled model (Ct2Model::assemble): its bytes in memory of their own, 64-byte aligned.
struct Ct2OwnedVariable {
  std::string name;
  std::vector<uint32_t> shape;
  Ct2Type type = Ct2Type::F32;
  TensorType blocks = TensorType::F32;
  AlignedBuffer bytes;
};

class Ct2Model {
 public:
  // Maps and checks `path` (a model.bin). Throws rayo::Error "PATH: REASON (at offset N)".
  static Ct2Model open(const std::string& path);
  // Checks an in-memory image (tests, fuzzing); the model keeps its own copy.
  static Ct2Model from_bytes(std::vector<uint8_t> bytes, std::string name = "<memory>");
  // A model made in memory from its variables (a whisper.cpp file read as
  // CTranslate2's variables): no image, so each variable stays where it was
  // made, aligned, and may be of type Blocks. Checks each variable's size
  // against its shape and each alias's target; throws rayo::Error naming `name`.
  static Ct2Model assemble(std::string name, std::string spec_name, uint32_t spec_revision,
                           std::vector<Ct2OwnedVariable> variables,
                           std::vector<std::pair<std::string, std::string>> aliases);

  const std::string& path() const { return path_; }
  // Whether the variables' bytes are a file's mapping (open), which can be
  // dropped from memory and read back, rather than the process's own memory.
  bool mapped() const { return !bytes_.empty() && owned_.empty() && buffers_.empty(); }
  // A mapped model's variable was copied elsewhere and will not be read here
  // again: its file pages may leave memory (MappedFile::drop_pages). No-op otherwise.
  void drop_pages(const Ct2Variable& v) const {
    if (mapped()) mapping_.drop_pages(v.bytes);
  }
  // An assembled model's variable that will not be read again: its memory
  // goes (AlignedBuffer::discard: a read by mistake faults). No-op for a
  // model with an image (mapped or from bytes).
  void discard(const Ct2Variable& v) const;
  uint32_t version() const { return version_; }
  const std::string& spec_name() const { return spec_name_; }  // "WhisperSpec"
  uint32_t spec_revision() const { return revision_; }
  const std::vector<Ct2Variable>& variables() const { return variables_; }
  // (alias, target) pairs.
  const std::vector<std::pair<std::string, std::string>>& aliases() const { return aliases_; }

  // The variable called `name`, or the one an alias of that name stands for; null when neither exists.
  const Ct2Variable* find(std::string_view name) const;
  // The same; throws "PATH: no variable 'NAME'" when absent.
  const Ct2Variable& get(std::string_view name) const;
  // A scalar integer variable (int8/16/32), e.g. "encoder/num_heads"; throws when absent or not one.
  int64_t integer(std::string_view name) const;

 private:
  Ct2Model() = default;
  void parse();

  std::string path_;
  MappedFile mapping_;
  std::vector<uint8_t> owned_;
  mutable std::vector<AlignedBuffer> buffers_;  // an assembled model's variables (discard() lets one go)
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  std::string spec_name_;
  uint32_t revision_ = 0;
  std::vector<Ct2Variable> variables_;
  std::vector<std::pair<std::string, std::string>> aliases_;
};

}  // namespace rayo::whisper
