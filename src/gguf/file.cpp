#include "gguf/file.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "common/error.h"

namespace rayo::gguf {

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::U8: return "u8";
    case ValueType::I8: return "i8";
    case ValueType::U16: return "u16";
    case ValueType::I16: return "i16";
    case ValueType::U32: return "u32";
    case ValueType::I32: return "i32";
    case ValueType::F32: return "f32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::U64: return "u64";
    case ValueType::I64: return "i64";
    case ValueType::F64: return "f64";
  }
  return "unknown";
}

namespace {

bool is_unsigned_type(ValueType t) {
  return t == ValueType::U8 || t == ValueType::U16 || t == ValueType::U32 || t == ValueType::U64;
}
bool is_signed_type(ValueType t) {
  return t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 || t == ValueType::I64;
}

// Bytes a scalar of this type occupies in the file; 0 for string and array.
uint64_t scalar_size(ValueType t) {
  switch (t) {
    case ValueType::U8: case ValueType::I8: case ValueType::BOOL: return 1;
    case ValueType::U16: case ValueType::I16: return 2;
    case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
    case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
    default: return 0;
  }
}

// The fewest bytes one value of this type can take, so that a count read from
// the file can be checked against the bytes left before anything is allocated.
uint64_t min_encoded_size(ValueType t) {
  if (t == ValueType::STRING) return 8;              // length
  if (t == ValueType::ARRAY) return 4 + 8;           // element type + count
  return scalar_size(t);
}

bool known_value_type(uint32_t id) { return id <= static_cast<uint32_t>(ValueType::F64); }

// Headroom for nested arrays: real files nest at most one level; the limit keeps
// hostile input from exhausting the stack through recursion.
constexpr int kMaxArrayDepth = 8;

// A tensor info takes at least: name length, n_dims, one dim, type, offset.
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
// A metadata entry takes at least: key length, value type, a one-byte value.
constexpr uint64_t kMinKeyValueBytes = 8 + 4 + 1;
constexpr uint32_t kMaxDims = 4;

}  // namespace

// 'name' for messages, with control bytes escaped and long names cut.
std::string quoted(std::string_view s) {
  std::string q = quote_for_message(s, 120);
  q.front() = '\'';
  q.back() = '\'';
  return q;
}

// ---------------------------------------------------------------- Value

bool Value::is_integer() const { return is_unsigned_type(type_) || is_signed_type(type_); }
bool Value::is_float() const { return type_ == ValueType::F32 || type_ == ValueType::F64; }

std::string Value::describe() const {
  if (is_unsigned_type(type_)) return cat(value_type_name(type_), " ", scalar_.u);
  if (is_signed_type(type_)) return cat(value_type_name(type_), " ", scalar_.i);
  if (is_float()) return cat(value_type_name(type_), " ", scalar_.f);
  if (type_ == ValueType::BOOL) return scalar_.u ? "bool true" : "bool false";
  if (type_ == ValueType::ARRAY) return cat("array of ", value_type_name(element_type_));
  return std::string(value_type_name(type_));
}

uint64_t Value::as_uint() const {
  if (is_unsigned_type(type_)) return scalar_.u;
  if (is_signed_type(type_) && scalar_.i >= 0) return static_cast<uint64_t>(scalar_.i);
  fail("expected an unsigned integer, found ", describe());
}

int64_t Value::as_int() const {
  if (is_signed_type(type_)) return scalar_.i;
  if (is_unsigned_type(type_) && scalar_.u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return static_cast<int64_t>(scalar_.u);
  fail("expected an integer, found ", describe());
}

double Value::as_float() const {
  if (is_float()) return scalar_.f;
  if (is_unsigned_type(type_)) return static_cast<double>(scalar_.u);
  if (is_signed_type(type_)) return static_cast<double>(scalar_.i);
  fail("expected a number, found ", describe());
}

bool Value::as_bool() const {
  if (type_ == ValueType::BOOL) return scalar_.u != 0;
  fail("expected a bool, found ", describe());
}

std::string_view Value::as_string() const {
  if (type_ == ValueType::STRING) return string_;
  fail("expected a string, found ", describe());
}

std::string Value::summary(size_t max_items) const {
  switch (type_) {
    case ValueType::STRING: return quote_for_message(string_, 120);
    case ValueType::BOOL: return scalar_.u ? "true" : "false";
    case ValueType::F32:
    case ValueType::F64: return cat(scalar_.f);
    case ValueType::ARRAY: {
      std::string out = cat("[", value_type_name(element_type_), "; ", items_.size(), "]");
      if (items_.empty() || max_items == 0) return out;
      out += " [";
      const size_t shown = std::min(max_items, items_.size());
      for (size_t i = 0; i < shown; ++i) {
        if (i) out += ", ";
        out += items_[i].type_ == ValueType::ARRAY ? items_[i].summary(0) : items_[i].summary();
      }
      if (shown < items_.size()) out += ", ...";
      return out + "]";
    }
    default:
      return is_unsigned_type(type_) ? cat(scalar_.u) : cat(scalar_.i);
  }
}

// ---------------------------------------------------------------- Parser

struct File::Index {
  std::unordered_map<std::string_view, size_t> keys;
  std::unordered_map<std::string_view, size_t> tensors;
  uint64_t tensor_bytes = 0;
};

// Reads the file front to back with a bounds-checked cursor. Every read states
// what it is reading, so that a failure names the item and its offset.
class Parser {
 public:
  explicit Parser(File& file) : file_(file), bytes_(file.bytes_) {}

  void parse() {
    file_.index_ = std::make_unique<File::Index>();
    read_header();
    read_metadata();
    read_alignment();
    read_tensor_infos();
    place_tensor_data();
  }

 private:
  template <typename... Args>
  [[noreturn]] void error(uint64_t offset, const Args&... args) {
    fail(file_.name_, ": ", cat(args...), " (at offset ", offset, ")");
  }

  uint64_t remaining() const { return bytes_.size() - pos_; }

  void need(uint64_t n, std::string_view what) {
    if (n > remaining()) error(pos_, "unexpected end of file in ", what);
  }

  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));  // GGUF is little-endian, like the hosts we run on
    pos_ += sizeof(T);
    return v;
  }

  std::string_view read_string(std::string_view what) {
    const uint64_t at = pos_;
    const uint64_t len = read<uint64_t>(what);
    if (len > remaining())
      error(at, "string length ", len, " in ", what, " runs past the end of the file (", remaining(),
            " bytes left)");
    std::string_view s(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
    pos_ += len;
    return s;
  }

  void read_header() {
    need(4, "the magic");
    if (std::memcmp(bytes_.data(), "GGUF", 4) != 0) {
      std::string_view got(reinterpret_cast<const char*>(bytes_.data()), 4);
      error(0, "not a GGUF file (magic ", quote_for_message(got), ", expected \"GGUF\")");
    }
    pos_ = 4;
    const uint64_t version_at = pos_;
    const uint32_t version = read<uint32_t>("the version");
    if (version == 1) error(version_at, "GGUF version 1 is not supported (re-convert the model; versions 2 and 3 are)");
    if (version == 0x02000000u || version == 0x03000000u)
      error(version_at, "big-endian GGUF files are not supported");
    if (version != 2 && version != 3)
      error(version_at, "unsupported GGUF version ", version, " (supported: 2, 3)");
    file_.version_ = version;

    const uint64_t counts_at = pos_;
    n_tensors_ = read<uint64_t>("the tensor count");
    n_kv_ = read<uint64_t>("the metadata count");
    // Each entry takes a minimum number of bytes, so the counts are bounded by the
    // file size; checking that first keeps absurd counts from driving allocation.
    const uint64_t left = remaining();
    if (n_tensors_ > left / kMinTensorInfoBytes)
      error(counts_at, "tensor count ", n_tensors_, " is implausible for a file of ", bytes_.size(), " bytes");
    if (n_kv_ > left / kMinKeyValueBytes)
      error(counts_at + 8, "metadata count ", n_kv_, " is implausible for a file of ", bytes_.size(), " bytes");
    if (n_tensors_ * kMinTensorInfoBytes + n_kv_ * kMinKeyValueBytes > left)
      error(counts_at, "tensor count ", n_tensors_, " and metadata count ", n_kv_,
            " are implausible for a file of ", bytes_.size(), " bytes");
  }

  void read_value(Value& v, ValueType type, int depth, const std::string& what) {
    v.type_ = type;
    switch (type) {
      case ValueType::U8: v.scalar_.u = read<uint8_t>(what); break;
      case ValueType::I8: v.scalar_.i = read<int8_t>(what); break;
      case ValueType::U16: v.scalar_.u = read<uint16_t>(what); break;
      case ValueType::I16: v.scalar_.i = read<int16_t>(what); break;
      case ValueType::U32: v.scalar_.u = read<uint32_t>(what); break;
      case ValueType::I32: v.scalar_.i = read<int32_t>(what); break;
      case ValueType::U64: v.scalar_.u = read<uint64_t>(what); break;
      case ValueType::I64: v.scalar_.i = read<int64_t>(what); break;
      case ValueType::F32: v.scalar_.f = read<float>(what); break;
      case ValueType::F64: v.scalar_.f = read<double>(what); break;
      case ValueType::BOOL: {
        const uint64_t at = pos_;
        const uint8_t b = read<uint8_t>(what);
        if (b > 1) error(at, "bool ", unsigned(b), " in ", what, " is neither 0 nor 1");
        v.scalar_.u = b;
        break;
      }
      case ValueType::STRING: v.string_ = read_string(what); break;
      case ValueType::ARRAY: {
        const uint64_t at = pos_;
        if (depth >= kMaxArrayDepth) error(at, "arrays nested more than ", kMaxArrayDepth, " deep in ", what);
        const uint32_t elem = read<uint32_t>(what);
        if (!known_value_type(elem)) error(at, "unknown array element type ", elem, " in ", what);
        v.element_type_ = static_cast<ValueType>(elem);
        const uint64_t count_at = pos_;
        const uint64_t count = read<uint64_t>(what);
        if (count > remaining() / min_encoded_size(v.element_type_))
          error(count_at, "array of ", count, " ", value_type_name(v.element_type_), " values in ", what,
                " runs past the end of the file (", remaining(), " bytes left)");
        v.items_.resize(count);
        for (auto& item : v.items_) read_value(item, v.element_type_, depth + 1, what);
        break;
      }
    }
  }

  void read_metadata() {
    file_.metadata_.reserve(n_kv_);
    for (uint64_t k = 0; k < n_kv_; ++k) {
      const uint64_t entry_at = pos_;
      const std::string_view key = read_string(cat("the key of metadata entry ", k));
      const std::string what = cat("the value of key ", quoted(key));
      const uint64_t type_at = pos_;
      const uint32_t type = read<uint32_t>(what);
      if (!known_value_type(type)) error(type_at, "key ", quoted(key), " has unknown value type ", type);
      if (!file_.index_->keys.emplace(key, file_.metadata_.size()).second)
        error(entry_at, "duplicate key ", quoted(key));
      value_offsets_.push_back(pos_);
      MetadataEntry& entry = file_.metadata_.emplace_back();
      entry.key = key;
      read_value(entry.value, static_cast<ValueType>(type), 0, what);
    }
  }

  void read_alignment() {
    auto it = file_.index_->keys.find("general.alignment");
    if (it == file_.index_->keys.end()) return;
    const Value& v = file_.metadata_[it->second].value;
    const uint64_t at = value_offsets_[it->second];
    if (!v.is_integer()) error(at, "key 'general.alignment': expected an unsigned integer, found ", v.describe());
    if (is_signed_type(v.type()) && v.as_int() <= 0)
      error(at, "general.alignment ", v.as_int(), " is not a power of two");
    const uint64_t a = v.as_uint();
    if (a == 0 || (a & (a - 1)) != 0) error(at, "general.alignment ", a, " is not a power of two");
    if (a > (uint64_t{1} << 30)) error(at, "general.alignment ", a, " is too large (at most 2^30)");
    file_.alignment_ = a;
  }

  void read_tensor_infos() {
    file_.tensors_.reserve(n_tensors_);
    for (uint64_t t = 0; t < n_tensors_; ++t) {
      const uint64_t info_at = pos_;
      const std::string_view name = read_string(cat("the name of tensor info ", t));
      const std::string qname = quoted(name);
      const std::string what = cat("the info of tensor ", qname);
      if (!file_.index_->tensors.emplace(name, file_.tensors_.size()).second)
        error(info_at, "duplicate tensor name ", qname);
      TensorInfo& info = file_.tensors_.emplace_back();
      info.name = name;

      const uint64_t dims_at = pos_;
      const uint32_t n_dims = read<uint32_t>(what);
      if (n_dims == 0 || n_dims > kMaxDims)
        error(dims_at, "tensor ", qname, " has ", n_dims, " dimensions (expected 1 to ", kMaxDims, ")");
      info.ne.resize(n_dims);
      uint64_t n = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        const uint64_t dim_at = pos_;
        const uint64_t dim = read<uint64_t>(what);
        if (dim == 0) error(dim_at, "tensor ", qname, " has a zero dimension (ne[", d, "] = 0)");
        // ggml holds dims and element counts as int64.
        if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
            __builtin_mul_overflow(n, dim, &n) || n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          error(dim_at, "tensor ", qname, " has too many elements (dimensions overflow 63 bits)");
        info.ne[d] = dim;
      }
      info.n_elements = n;

      const uint64_t type_at = pos_;
      const uint32_t type_id = read<uint32_t>(what);
      const auto type = tensor_type_info(type_id);
      if (!type) error(type_at, "tensor ", qname, " has unknown type ", type_id);
      info.type = type->type;
      if (info.ne[0] % type->block_size != 0)
        error(type_at, "tensor ", qname, " has rows of ", info.ne[0], " values, not a multiple of the ",
              type->name, " block size ", type->block_size);
      // n / block_size * block_bytes cannot overflow: n < 2^63 and block_bytes / block_size < 2^3
      // for every known type except the byte-per-value ones whose n_bytes <= 8n; check anyway.
      if (__builtin_mul_overflow(n / type->block_size, uint64_t{type->block_bytes}, &info.n_bytes))
        error(type_at, "tensor ", qname, " is too large (byte size overflows 64 bits)");

      const uint64_t offset_at = pos_;
      info.offset = read<uint64_t>(what);
      if (info.offset % file_.alignment_ != 0)
        error(offset_at, "tensor ", qname, " data offset ", info.offset, " is not a multiple of the alignment ",
              file_.alignment_);
      offset_positions_.push_back(offset_at);
    }
  }

  void place_tensor_data() {
    const uint64_t a = file_.alignment_;
    const uint64_t end_of_infos = pos_;
    const uint64_t data_offset = (end_of_infos + a - 1) / a * a;
    file_.data_offset_ = data_offset;
    if (file_.tensors_.empty()) return;
    if (data_offset > bytes_.size())
      error(end_of_infos, "unexpected end of file in the padding before the tensor data (data would start at ",
            data_offset, ", file has ", bytes_.size(), " bytes)");
    const uint64_t data_size = bytes_.size() - data_offset;
    uint64_t total = 0;
    for (size_t t = 0; t < file_.tensors_.size(); ++t) {
      TensorInfo& info = file_.tensors_[t];
      if (info.offset > data_size || info.n_bytes > data_size - info.offset)
        error(offset_positions_[t], "tensor ", quoted(info.name), " data [", info.offset, ", +",
              info.n_bytes, ") runs past the end of the file (data section has ", data_size, " bytes)");
      info.data = bytes_.data() + data_offset + info.offset;
      total += info.n_bytes;
    }
    file_.index_->tensor_bytes = total;
  }

  File& file_;
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
  std::vector<uint64_t> value_offsets_;     // per metadata entry, where its value starts
  std::vector<uint64_t> offset_positions_;  // per tensor, where its offset field is
};

// ---------------------------------------------------------------- File

File::File() = default;
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

File File::open(const std::string& path) {
  File f;
  f.name_ = path;
  f.mapping_ = MappedFile(path);
  f.bytes_ = f.mapping_.bytes();
  Parser(f).parse();
  return f;
}

File File::from_bytes(std::vector<uint8_t> bytes, std::string name) {
  File f;
  f.name_ = std::move(name);
  f.owned_ = std::move(bytes);
  f.bytes_ = std::span<const uint8_t>(f.owned_.data(), f.owned_.size());
  Parser(f).parse();
  return f;
}

const Value* File::find(std::string_view key) const {
  auto it = index_->keys.find(key);
  return it == index_->keys.end() ? nullptr : &metadata_[it->second].value;
}

namespace {

template <typename T>
T convert(const Value& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v.as_bool();
  } else if constexpr (std::is_same_v<T, std::string_view>) {
    return v.as_string();
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v.as_float());
  } else if constexpr (std::is_unsigned_v<T>) {
    const uint64_t u = v.as_uint();
    if (u > std::numeric_limits<T>::max())
      fail("expected an unsigned ", sizeof(T) * 8, "-bit integer, found ", v.describe());
    return static_cast<T>(u);
  } else {
    const int64_t i = v.as_int();
    if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max())
      fail("expected a ", sizeof(T) * 8, "-bit integer, found ", v.describe());
    return static_cast<T>(i);
  }
}

}  // namespace

template <typename T>
std::optional<T> File::get_optional(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  try {
    return convert<T>(*v);
  } catch (const Error& e) {
    fail(name_, ": key ", quoted(key), ": ", e.what());
  }
}

template <typename T>
T File::get(std::string_view key) const {
  auto v = get_optional<T>(key);
  if (!v) fail(name_, ": missing key ", quoted(key));
  return *v;
}

#define RAYO_GGUF_INSTANTIATE(T)                                   \
  template T File::get<T>(std::string_view) const;                 \
  template std::optional<T> File::get_optional<T>(std::string_view) const;
RAYO_GGUF_INSTANTIATE(bool)
RAYO_GGUF_INSTANTIATE(uint32_t)
RAYO_GGUF_INSTANTIATE(uint64_t)
RAYO_GGUF_INSTANTIATE(int32_t)
RAYO_GGUF_INSTANTIATE(int64_t)
RAYO_GGUF_INSTANTIATE(float)
RAYO_GGUF_INSTANTIATE(double)
RAYO_GGUF_INSTANTIATE(std::string_view)
#undef RAYO_GGUF_INSTANTIATE

namespace {

template <typename T>
std::vector<T> convert_array(const File& file, const Value* v, std::string_view key, std::string_view expected) {
  if (!v) fail(file.path(), ": missing key ", quoted(key));
  if (v->type() != ValueType::ARRAY)
    fail(file.path(), ": key ", quoted(key), ": expected ", expected, ", found ", v->describe());
  std::vector<T> out;
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    try {
      out.push_back(convert<T>(v->at(i)));
    } catch (const Error& e) {
      fail(file.path(), ": key ", quoted(key), ": element ", i, ": ", e.what());
    }
  }
  return out;
}

}  // namespace

std::vector<std::string_view> File::get_string_array(std::string_view key) const {
  return convert_array<std::string_view>(*this, find(key), key, "an array of strings");
}

std::vector<float> File::get_float_array(std::string_view key) const {
  return convert_array<float>(*this, find(key), key, "an array of numbers");
}

std::vector<int64_t> File::get_int_array(std::string_view key) const {
  return convert_array<int64_t>(*this, find(key), key, "an array of integers");
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = index_->tensors.find(name);
  return it == index_->tensors.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& File::tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) fail(name_, ": missing tensor ", quoted(name));
  return *t;
}

uint64_t File::tensor_bytes() const { return index_->tensor_bytes; }

}  // namespace rayo::gguf
