#include "gguf/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"

namespace rayo::gguf {
namespace {

constexpr uint32_t kVersion = 3;
constexpr std::string_view kAlignmentKey = "general.alignment";

void put_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
  // resize + memcpy rather than insert: g++ 12 warns falsely on the latter.
  const size_t old = out.size();
  out.resize(old + n);
  if (n) std::memcpy(out.data() + old, p, n);
}
template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  put_bytes(out, &v, sizeof v);  // little-endian host, as GGUF
}
void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  put_bytes(out, s.data(), s.size());
}

size_t scalar_bytes(ValueType t) {
  switch (t) {
    case ValueType::U8: case ValueType::I8: case ValueType::BOOL: return 1;
    case ValueType::U16: case ValueType::I16: return 2;
    case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
    default: return 8;
  }
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

// ---------------------------------------------------------------- MetaValue

MetaValue MetaValue::scalar(ValueType t, uint64_t bits) {
  MetaValue v;
  v.type_ = t;
  v.bits_ = bits;
  return v;
}
MetaValue MetaValue::f32(float x) { return scalar(ValueType::F32, std::bit_cast<uint32_t>(x)); }
MetaValue MetaValue::f64(double x) { return scalar(ValueType::F64, std::bit_cast<uint64_t>(x)); }
MetaValue MetaValue::string(std::string s) {
  MetaValue v;
  v.type_ = ValueType::STRING;
  v.string_ = std::move(s);
  return v;
}
MetaValue MetaValue::array(ValueType element_type, std::vector<MetaValue> items) {
  MetaValue v;
  v.type_ = ValueType::ARRAY;
  v.element_type_ = element_type;
  v.items_ = std::move(items);
  return v;
}

MetaValue MetaValue::from(const Value& v) {
  switch (v.type()) {
    case ValueType::U8: return u8(static_cast<uint8_t>(v.as_uint()));
    case ValueType::I8: return i8(static_cast<int8_t>(v.as_int()));
    case ValueType::U16: return u16(static_cast<uint16_t>(v.as_uint()));
    case ValueType::I16: return i16(static_cast<int16_t>(v.as_int()));
    case ValueType::U32: return u32(static_cast<uint32_t>(v.as_uint()));
    case ValueType::I32: return i32(static_cast<int32_t>(v.as_int()));
    case ValueType::U64: return u64(v.as_uint());
    case ValueType::I64: return i64(v.as_int());
    case ValueType::F32: return f32(static_cast<float>(v.as_float()));
    case ValueType::F64: return f64(v.as_float());
    case ValueType::BOOL: return boolean(v.as_bool());
    case ValueType::STRING: return string(std::string(v.as_string()));
    case ValueType::ARRAY: {
      std::vector<MetaValue> items;
      items.reserve(v.size());
      for (const auto& item : v.items()) items.push_back(from(item));
      return array(v.element_type(), std::move(items));
    }
  }
  fail("cannot copy a value of unknown type");
}

// ---------------------------------------------------------------- serialisation

class MetaValueWriter {
 public:
  static void payload(std::vector<uint8_t>& out, const MetaValue& v, std::string_view key) {
    switch (v.type_) {
      case ValueType::STRING: put_string(out, v.string_); return;
      case ValueType::ARRAY:
        put<uint32_t>(out, static_cast<uint32_t>(v.element_type_));
        put<uint64_t>(out, v.items_.size());
        for (const auto& item : v.items_) {
          if (item.type_ != v.element_type_)
            fail("metadata ", quoted(key), ": array of ", value_type_name(v.element_type_), " holds a ",
                 value_type_name(item.type_));
          payload(out, item, key);
        }
        return;
      default: put_bytes(out, &v.bits_, scalar_bytes(v.type_)); return;
    }
  }
};

Writer::Writer(uint64_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > (uint64_t{1} << 30))
    fail("GGUF alignment ", alignment, " is not a power of two up to 2^30");
}

void Writer::add(std::string_view key, const MetaValue& value) {
  if (std::find(keys_.begin(), keys_.end(), key) != keys_.end()) fail("duplicate metadata key ", quoted(key));
  if (key == kAlignmentKey) {
    if (value.type() != ValueType::U32) fail("general.alignment must be a u32");
    const uint64_t a = value.bits_;
    if (a == 0 || (a & (a - 1)) != 0) fail("general.alignment ", a, " is not a power of two");
    if (!tensors_.empty() && a != alignment_) fail("general.alignment must be set before the first tensor");
    alignment_ = a;
  }
  keys_.emplace_back(key);
  put_string(kv_bytes_, key);
  put<uint32_t>(kv_bytes_, static_cast<uint32_t>(value.type()));
  MetaValueWriter::payload(kv_bytes_, value, key);
  ++n_kv_;
}

void Writer::add_string_array(std::string_view key, const std::vector<std::string>& items) {
  std::vector<MetaValue> values;
  values.reserve(items.size());
  for (const auto& s : items) values.push_back(MetaValue::string(s));
  add(key, MetaValue::array(ValueType::STRING, std::move(values)));
}

void Writer::add_f32_array(std::string_view key, const std::vector<float>& items) {
  std::vector<MetaValue> values;
  values.reserve(items.size());
  for (float f : items) values.push_back(MetaValue::f32(f));
  add(key, MetaValue::array(ValueType::F32, std::move(values)));
}

void Writer::add_i32_array(std::string_view key, const std::vector<int32_t>& items) {
  std::vector<MetaValue> values;
  values.reserve(items.size());
  for (int32_t i : items) values.push_back(MetaValue::i32(i));
  add(key, MetaValue::array(ValueType::I32, std::move(values)));
}

void Writer::copy_metadata(const File& file) {
  for (const auto& entry : file.metadata()) add(entry.key, MetaValue::from(entry.value));
}

const WriterTensor& Writer::add_tensor(std::string_view name, TensorType type, std::vector<uint64_t> ne) {
  for (const auto& t : tensors_)
    if (t.name == name) fail("duplicate tensor name ", quoted(name));
  if (ne.empty() || ne.size() > 4) fail("tensor ", quoted(name), " has ", ne.size(), " dimensions (expected 1 to 4)");
  uint64_t n = 1;
  for (uint64_t d : ne) {
    if (d == 0) fail("tensor ", quoted(name), " has a zero dimension");
    if (__builtin_mul_overflow(n, d, &n)) fail("tensor ", quoted(name), " has too many elements");
  }
  const auto& ti = info(type);
  if (ne[0] % ti.block_size != 0)
    fail("tensor ", quoted(name), " has rows of ", ne[0], " values, not a multiple of the ", ti.name,
         " block size ", ti.block_size);
  WriterTensor t;
  t.name = std::string(name);
  t.type = type;
  t.ne = std::move(ne);
  t.n_bytes = n / ti.block_size * ti.block_bytes;
  t.offset = align_up(data_size_, alignment_);
  data_size_ = t.offset + t.n_bytes;
  tensors_.push_back(std::move(t));
  return tensors_.back();
}

std::vector<uint8_t> Writer::header_bytes() const {
  const bool add_alignment =
      alignment_ != 32 && std::find(keys_.begin(), keys_.end(), kAlignmentKey) == keys_.end();
  std::vector<uint8_t> out;
  out.reserve(kv_bytes_.size() + 64 + tensors_.size() * 96);
  put_bytes(out, "GGUF", 4);
  put<uint32_t>(out, kVersion);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, n_kv_ + (add_alignment ? 1 : 0));
  put_bytes(out, kv_bytes_.data(), kv_bytes_.size());
  if (add_alignment) {
    put_string(out, kAlignmentKey);
    put<uint32_t>(out, static_cast<uint32_t>(ValueType::U32));
    put<uint32_t>(out, static_cast<uint32_t>(alignment_));
  }
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) put<uint64_t>(out, d);
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, t.offset);
  }
  out.resize(align_up(out.size(), alignment_), 0);
  return out;
}

uint64_t Writer::header_size() const { return header_bytes().size(); }

uint64_t Writer::file_size() const { return header_size() + data_size_; }

// ---------------------------------------------------------------- output

// Where the image goes: a file descriptor (through a large buffer) or memory.
class WriterOutput {
 public:
  virtual ~WriterOutput() = default;
  virtual void write(const uint8_t* p, size_t n) = 0;
  void zeros(uint64_t n) {
    static const uint8_t kZeros[4096] = {};
    while (n > 0) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, sizeof kZeros));
      write(kZeros, k);
      n -= k;
    }
  }
};

namespace {

class MemoryOutput final : public WriterOutput {
 public:
  explicit MemoryOutput(uint64_t reserve) { bytes.reserve(reserve); }
  void write(const uint8_t* p, size_t n) override { put_bytes(bytes, p, n); }
  std::vector<uint8_t> bytes;
};

class FdOutput final : public WriterOutput {
 public:
  FdOutput(int fd, std::string path) : fd_(fd), path_(std::move(path)) { buffer_.reserve(kBufferBytes); }
  void write(const uint8_t* p, size_t n) override {
    if (buffer_.size() + n > kBufferBytes) flush();
    if (n >= kBufferBytes) {
      write_all(p, n);
      return;
    }
    put_bytes(buffer_, p, n);
  }
  void flush() {
    write_all(buffer_.data(), buffer_.size());
    buffer_.clear();
  }

 private:
  static constexpr size_t kBufferBytes = size_t{4} << 20;
  void write_all(const uint8_t* p, size_t n) {
    while (n > 0) {
      const ssize_t k = ::write(fd_, p, n);
      if (k < 0) {
        if (errno == EINTR) continue;
        fail(path_, ": write failed: ", std::strerror(errno));
      }
      p += k;
      n -= static_cast<size_t>(k);
    }
  }
  int fd_;
  std::string path_;
  std::vector<uint8_t> buffer_;
};

// Counts what a producer writes into one tensor and refuses more than declared.
class CheckedSink final : public TensorSink {
 public:
  CheckedSink(WriterOutput& out, const WriterTensor& t) : out_(out), tensor_(t) {}
  void write(std::span<const uint8_t> bytes) override {
    if (bytes.size() > tensor_.n_bytes - written_)
      fail("tensor ", quoted(tensor_.name), ": producer wrote more than its ", tensor_.n_bytes, " bytes");
    out_.write(bytes.data(), bytes.size());
    written_ += bytes.size();
  }
  uint64_t written() const { return written_; }

 private:
  WriterOutput& out_;
  const WriterTensor& tensor_;
  uint64_t written_ = 0;
};

// Closes a descriptor and removes the temporary file unless committed.
struct TempFile {
  int fd = -1;
  std::string path;
  bool committed = false;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!committed) ::unlink(path.c_str());
  }
};

}  // namespace

void Writer::write_to(WriterOutput& out, const TensorProducer& produce, const WriteProgress& progress) const {
  const std::vector<uint8_t> header = header_bytes();
  const uint64_t total = header.size() + data_size_;
  out.write(header.data(), header.size());
  uint64_t pos = 0;  // within the data section
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const WriterTensor& t = tensors_[i];
    out.zeros(t.offset - pos);
    CheckedSink sink(out, t);
    if (produce) produce(i, t, sink);
    if (sink.written() != t.n_bytes)
      fail("tensor ", quoted(t.name), ": producer wrote ", sink.written(), " of its ", t.n_bytes, " bytes");
    pos = t.offset + t.n_bytes;
    if (progress) progress(header.size() + pos, total);
  }
}

void Writer::write_file(const std::string& path, const TensorProducer& produce, const WriteProgress& progress) const {
  TempFile tmp;
  tmp.path = path + ".tmp";
  tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (tmp.fd < 0) fail(tmp.path, ": cannot create: ", std::strerror(errno));
  FdOutput out(tmp.fd, tmp.path);
  write_to(out, produce, progress);
  out.flush();
  if (::close(tmp.fd) != 0) {
    tmp.fd = -1;
    fail(tmp.path, ": close failed: ", std::strerror(errno));
  }
  tmp.fd = -1;
  if (::rename(tmp.path.c_str(), path.c_str()) != 0)
    fail(path, ": cannot rename from ", tmp.path, ": ", std::strerror(errno));
  tmp.committed = true;
}

std::vector<uint8_t> Writer::write_bytes(const TensorProducer& produce) const {
  MemoryOutput out(file_size());
  write_to(out, produce, {});
  return std::move(out.bytes);
}

std::vector<uint8_t> Writer::write_bytes(const std::vector<std::vector<uint8_t>>& data) const {
  if (data.size() != tensors_.size()) fail("write_bytes: ", data.size(), " buffers for ", tensors_.size(), " tensors");
  return write_bytes([&](size_t i, const WriterTensor&, TensorSink& out) { out.write(data[i]); });
}

}  // namespace rayo::gguf
