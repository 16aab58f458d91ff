#pragma once
// GGUF reader (versions 2 and 3). The file is memory-mapped and validated in full
// before anything uses it: an invalid file raises one rayo::Error naming the file,
// the reason and the byte offset, never undefined behaviour. Tensor data and
// string values are zero-copy views into the mapping, valid while the File lives.
//
// Spec: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
//
// What is checked, before anything is handed out: magic, version (2 or 3), that
// the tensor and key counts fit the file size, that every string and array stays
// inside the file, that keys and tensor names are unique, that every tensor has 1
// to 4 non-zero dimensions whose product does not overflow, a known type, rows
// made of whole blocks, an offset aligned to `general.alignment` (a power of two,
// default 32) and data that lies inside the file.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/mapped_file.h"
#include "quant/tensor_type.h"

namespace rayo::gguf {

enum class ValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
std::string_view value_type_name(ValueType type);  // "u32", "string", "array", ...

// 'name' for an error message: control bytes escaped, long names cut.
std::string quoted(std::string_view s);

// One metadata value. Arrays may nest (arrays of arrays).
class Value {
 public:
  ValueType type() const { return type_; }
  bool is_integer() const;  // u8..i64
  bool is_float() const;    // f32, f64

  // Checked conversions. They throw rayo::Error("expected ..., found ...") when the
  // type does not fit or an integer is out of range; File::get adds the key name.
  uint64_t as_uint() const;  // any integer type >= 0
  int64_t as_int() const;    // any integer type that fits
  double as_float() const;   // f32/f64, or an integer
  bool as_bool() const;
  std::string_view as_string() const;

  // Arrays. Arrays of scalars and strings (vocabularies, scores, merges) are
  // validated when the file is opened but their elements are only decoded on the
  // first call to items() or at(), so opening a file costs no per-token
  // allocation. Decoding is thread-safe.
  ValueType element_type() const { return element_type_; }
  size_t size() const;
  const Value& at(size_t i) const { return items().at(i); }
  const std::vector<Value>& items() const;

  // One-line summary for `rayo inspect`: `5`, `"llama"`, `[string; 32000]`, ...
  std::string summary(size_t max_items = 8) const;

  // "string", "u32 7", "array of f32": what a value is, for error messages.
  std::string describe() const;

 private:
  friend class Parser;
  friend struct ValueDecoder;
  ValueType type_ = ValueType::U8;
  ValueType element_type_ = ValueType::U8;
  union {
    uint64_t u;
    int64_t i;
    double f;
  } scalar_{0};
  std::string_view string_;
  std::vector<Value> items_;  // arrays of arrays, decoded when the file is opened
  struct LazyItems;           // arrays of scalars or strings, decoded on first use
  std::shared_ptr<LazyItems> lazy_;
  std::vector<Value> first_items(size_t n) const;  // without decoding the rest
};

struct MetadataEntry {
  std::string_view key;
  Value value;
};

struct TensorInfo {
  std::string_view name;
  TensorType type;
  std::vector<uint64_t> ne;  // dims, fastest-varying first (ggml's ne[0] is the row length)
  uint64_t n_elements = 0;
  uint64_t offset = 0;    // relative to the start of the data section
  uint64_t n_bytes = 0;   // n_elements / block_size * block_bytes
  const uint8_t* data = nullptr;  // into the mapping

  uint64_t rows() const { return n_elements / ne.at(0); }
  std::span<const uint8_t> bytes() const { return {data, n_bytes}; }
};

class File {
 public:
  // Maps and validates a file. Throws rayo::Error "PATH: REASON (at offset N)".
  static File open(const std::string& path);
  // Validates an in-memory image (tests, fuzzing); the File keeps its own copy.
  static File from_bytes(std::vector<uint8_t> bytes, std::string name = "<memory>");

  const std::string& path() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute offset of the tensor data
  uint64_t file_size() const { return bytes_.size(); }
  // Whether the tensors' bytes are a read-only mapping of the file (open), whose
  // pages the kernel can drop and read back, rather than memory of this
  // process (from_bytes).
  bool mapped() const { return owned_.empty(); }

  const std::vector<MetadataEntry>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;  // nullptr if absent
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed metadata. T: bool, uint32_t, uint64_t, int32_t, int64_t, float, double,
  // std::string_view. get() throws when the key is missing; both throw when the
  // value has another type, naming the key and what was found:
  //   "key 'llama.block_count': expected an unsigned integer, found string"
  template <typename T>
  T get(std::string_view key) const;
  template <typename T>
  std::optional<T> get_optional(std::string_view key) const;

  // Arrays of strings / numbers (elements converted with the same checks).
  std::vector<std::string_view> get_string_array(std::string_view key) const;
  std::vector<float> get_float_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;  // nullptr if absent
  const TensorInfo& tensor(std::string_view name) const;       // throws "missing tensor 'NAME'"

  // Total bytes of tensor data.
  uint64_t tensor_bytes() const;

  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

 private:
  File();
  friend class Parser;
  std::string name_;
  MappedFile mapping_;             // when opened from a path
  std::vector<uint8_t> owned_;     // when built from bytes
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<MetadataEntry> metadata_;
  std::vector<TensorInfo> tensors_;
  struct Index;
  std::unique_ptr<Index> index_;  // key -> metadata entry, name -> tensor
};

}  // namespace rayo::gguf
