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

#include "common/mapped_file.h"

namespace rayo::whisper {

enum class Ct2Type : uint8_t { F32 = 0, I8 = 1, I16 = 2, I32 = 3, F16 = 4, BF16 = 5 };
std::string_view ct2_type_name(Ct2Type t);  // "float32", "int8", ... as CTranslate2 names them
size_t ct2_type_size(Ct2Type t);

struct Ct2Variable {
  std::string name;
  std::vector<uint32_t> shape;  // outermost first; empty for a scalar
  Ct2Type type = Ct2Type::F32;
  uint64_t offset = 0;          // of the first byte, in the file
  std::span<const uint8_t> bytes;

  uint64_t elements() const;
};

class Ct2Model {
 public:
  // Maps and checks `path` (a model.bin). Throws rayo::Error "PATH: REASON (at offset N)".
  static Ct2Model open(const std::string& path);
  // Checks an in-memory image (tests, fuzzing); the model keeps its own copy.
  static Ct2Model from_bytes(std::vector<uint8_t> bytes, std::string name = "<memory>");

  const std::string& path() const { return path_; }
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
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  std::string spec_name_;
  uint32_t revision_ = 0;
  std::vector<Ct2Variable> variables_;
  std::vector<std::pair<std::string, std::string>> aliases_;
};

}  // namespace rayo::whisper
