#pragma once
// GGUF writer (version 3). Metadata is serialised as it is added; tensors are
// declared up front (name, type, dims), which fixes the header and every data
// offset, and their bytes are then produced one tensor at a time by a callback
// that writes in chunks. A multi-gigabyte file is thus written in bounded memory.
//
//   Writer w;
//   w.add_string("general.architecture", "llama");
//   w.add_tensor("token_embd.weight", TensorType::Q4_K, {4096, 32000});
//   w.write_file(path, [&](size_t i, const WriterTensor& t, TensorSink& out) {
//     out.write(chunk);  // exactly t.n_bytes in total, in as many calls as wanted
//   });
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "quant/tensor_type.h"

namespace rayo::gguf {

// A metadata value owned by the writer side (the reader's Value is a view into a file).
class MetaValue {
 public:
  static MetaValue u8(uint8_t v) { return scalar(ValueType::U8, v); }
  static MetaValue i8(int8_t v) { return scalar(ValueType::I8, static_cast<uint64_t>(int64_t{v})); }
  static MetaValue u16(uint16_t v) { return scalar(ValueType::U16, v); }
  static MetaValue i16(int16_t v) { return scalar(ValueType::I16, static_cast<uint64_t>(int64_t{v})); }
  static MetaValue u32(uint32_t v) { return scalar(ValueType::U32, v); }
  static MetaValue i32(int32_t v) { return scalar(ValueType::I32, static_cast<uint64_t>(int64_t{v})); }
  static MetaValue u64(uint64_t v) { return scalar(ValueType::U64, v); }
  static MetaValue i64(int64_t v) { return scalar(ValueType::I64, static_cast<uint64_t>(v)); }
  static MetaValue f32(float v);
  static MetaValue f64(double v);
  static MetaValue boolean(bool v) { return scalar(ValueType::BOOL, v ? 1 : 0); }
  static MetaValue string(std::string v);
  // Every item must have type `element_type` (checked when serialised).
  static MetaValue array(ValueType element_type, std::vector<MetaValue> items);
  // A deep copy of a value read from a file.
  static MetaValue from(const Value& v);

  ValueType type() const { return type_; }

 private:
  friend class Writer;
  friend class MetaValueWriter;
  static MetaValue scalar(ValueType t, uint64_t bits);
  ValueType type_ = ValueType::U8;
  ValueType element_type_ = ValueType::U8;
  uint64_t bits_ = 0;  // little-endian payload of a scalar
  std::string string_;
  std::vector<MetaValue> items_;
};

struct WriterTensor {
  std::string name;
  TensorType type;
  std::vector<uint64_t> ne;  // fastest-varying first
  uint64_t n_bytes = 0;
  uint64_t offset = 0;       // relative to the data section
};

// Where a tensor's bytes go. Buffers and checks that the producer writes exactly
// the declared size.
class TensorSink {
 public:
  virtual ~TensorSink() = default;
  virtual void write(std::span<const uint8_t> bytes) = 0;
};

// Produces the bytes of tensor `index` (declaration order) into `out`.
using TensorProducer = std::function<void(size_t index, const WriterTensor& tensor, TensorSink& out)>;
// Called after each tensor with bytes written so far and the total file size.
using WriteProgress = std::function<void(uint64_t done, uint64_t total)>;

class WriterOutput;

class Writer {
 public:
  explicit Writer(uint64_t alignment = 32);

  // Metadata, in insertion order. A repeated key throws.
  void add(std::string_view key, const MetaValue& value);
  void add_u32(std::string_view key, uint32_t v) { add(key, MetaValue::u32(v)); }
  void add_i32(std::string_view key, int32_t v) { add(key, MetaValue::i32(v)); }
  void add_u64(std::string_view key, uint64_t v) { add(key, MetaValue::u64(v)); }
  void add_f32(std::string_view key, float v) { add(key, MetaValue::f32(v)); }
  void add_bool(std::string_view key, bool v) { add(key, MetaValue::boolean(v)); }
  void add_string(std::string_view key, std::string_view v) { add(key, MetaValue::string(std::string(v))); }
  void add_string_array(std::string_view key, const std::vector<std::string>& items);
  void add_f32_array(std::string_view key, const std::vector<float>& items);
  void add_i32_array(std::string_view key, const std::vector<int32_t>& items);
  // Copies every metadata entry of a file (general.alignment included).
  void copy_metadata(const File& file);

  // Declares a tensor; its data offset follows the previous one, aligned.
  // Throws on a repeated name, 0 or more than 4 dims, a zero dim or partial blocks.
  const WriterTensor& add_tensor(std::string_view name, TensorType type, std::vector<uint64_t> ne);

  const std::vector<WriterTensor>& tensors() const { return tensors_; }
  uint64_t alignment() const { return alignment_; }
  // Size of the finished file: header, metadata, tensor infos, padding, data.
  uint64_t file_size() const;

  // Writes the file (to PATH.tmp, renamed on success so a failed write leaves no
  // partial model behind). The producer is called once per tensor, in order.
  void write_file(const std::string& path, const TensorProducer& produce, const WriteProgress& progress = {}) const;
  // The same image in memory (tests, fuzz seeds).
  std::vector<uint8_t> write_bytes(const TensorProducer& produce) const;
  // Convenience for tests: tensor data given whole, in declaration order.
  std::vector<uint8_t> write_bytes(const std::vector<std::vector<uint8_t>>& data) const;

 private:
  void write_to(WriterOutput& out, const TensorProducer& produce, const WriteProgress& progress) const;
  std::vector<uint8_t> header_bytes() const;
  uint64_t header_size() const;

  uint64_t alignment_;
  uint64_t n_kv_ = 0;
  std::vector<uint8_t> kv_bytes_;
  std::vector<std::string> keys_;
  std::vector<WriterTensor> tensors_;
  uint64_t data_size_ = 0;
};

}  // namespace rayo::gguf
