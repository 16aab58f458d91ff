#include "whisper/ct2_model.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "common/byte_reader.h"
#include "common/error.h"

namespace rayo::whisper {

std::string_view ct2_type_name(Ct2Type t) {
  switch (t) {
    case Ct2Type::F32: return "float32";
    case Ct2Type::I8: return "int8";
    case Ct2Type::I16: return "int16";
    case Ct2Type::I32: return "int32";
    case Ct2Type::F16: return "float16";
    case Ct2Type::BF16: return "bfloat16";
    case Ct2Type::Blocks: return "ggml blocks";
  }
  return "?";
}

size_t ct2_type_size(Ct2Type t) {
  switch (t) {
    case Ct2Type::I8: return 1;
    case Ct2Type::I16:
    case Ct2Type::F16:
    case Ct2Type::BF16: return 2;
    case Ct2Type::F32:
    case Ct2Type::I32: return 4;
    case Ct2Type::Blocks: return 0;
  }
  return 0;
}

uint64_t Ct2Variable::elements() const {
  uint64_t n = 1;
  for (uint32_t d : shape) n *= d;
  return n;
}

namespace {

// The versions whose layout is the one above (CTranslate2 3.x and 4.x write 6).
constexpr uint32_t kVersion = 6;
constexpr size_t kMaxRank = 8;

// A u16 length counting a trailing NUL, the characters, the NUL.
std::string read_string(ByteReader& r, const char* what) {
  const uint64_t at = r.offset();
  const uint16_t length = r.read<uint16_t>(what);
  if (length == 0) r.error(at, what, " has no terminating NUL");
  const auto bytes = r.take(length, what);
  const char* s = reinterpret_cast<const char*>(bytes.data());
  if (s[length - 1] != '\0') r.error(at, what, " is not NUL-terminated");
  if (std::memchr(s, '\0', length - 1) != nullptr) r.error(at, what, " holds a NUL");
  return std::string(s, length - 1);
}

}  // namespace

Ct2Model Ct2Model::open(const std::string& path) {
  Ct2Model m;
  m.path_ = path;
  m.mapping_ = MappedFile(path);
  m.bytes_ = m.mapping_.bytes();
  m.parse();
  return m;
}

Ct2Model Ct2Model::from_bytes(std::vector<uint8_t> bytes, std::string name) {
  Ct2Model m;
  m.path_ = std::move(name);
  m.owned_ = std::move(bytes);
  m.bytes_ = std::span<const uint8_t>(m.owned_.data(), m.owned_.size());
  m.parse();
  return m;
}

void Ct2Model::parse() {
  ByteReader r(path_, bytes_);
  version_ = r.read<uint32_t>("the version");
  if (version_ != kVersion)
    r.error(0, "CTranslate2 model version ", version_, " is not supported (version ", kVersion, " is)");
  spec_name_ = read_string(r, "the spec name");
  revision_ = r.read<uint32_t>("the spec revision");
  const uint64_t count_at = r.offset();
  const uint32_t n_variables = r.read<uint32_t>("the variable count");
  // Each variable takes at least 9 bytes (a 1-character name, rank, type, byte count).
  if (n_variables > bytes_.size() / 9) r.error(count_at, n_variables, " variables cannot fit in ", bytes_.size(), " bytes");
  variables_.reserve(n_variables);
  for (uint32_t i = 0; i < n_variables; ++i) {
    const uint64_t at = r.offset();
    Ct2Variable v;
    v.name = read_string(r, "a variable name");
    const uint8_t rank = r.read<uint8_t>("a rank");
    if (rank > kMaxRank) r.error(at, "variable '", v.name, "' has rank ", int{rank});
    for (uint8_t d = 0; d < rank; ++d) v.shape.push_back(r.read<uint32_t>("a dimension"));
    const uint64_t type_at = r.offset();
    const uint8_t type = r.read<uint8_t>("a type");
    if (type > static_cast<uint8_t>(Ct2Type::BF16)) r.error(type_at, "variable '", v.name, "' has unknown type ", int{type});
    v.type = static_cast<Ct2Type>(type);
    const uint32_t n_bytes = r.read<uint32_t>("a byte count");
    uint64_t expected = ct2_type_size(v.type);
    for (uint32_t d : v.shape) {
      if (d != 0 && expected > std::numeric_limits<uint32_t>::max() / d) expected = UINT64_MAX;
      else expected *= d;
    }
    if (expected != n_bytes)
      r.error(at, "variable '", v.name, "' holds ", n_bytes, " bytes, but its shape and type need ", expected);
    v.offset = r.offset();
    v.bytes = r.take(n_bytes, "a variable's data");
    variables_.push_back(std::move(v));
  }
  const uint32_t n_aliases = r.read<uint32_t>("the alias count");
  for (uint32_t i = 0; i < n_aliases; ++i) {
    const uint64_t at = r.offset();
    std::string alias = read_string(r, "an alias");
    std::string target = read_string(r, "an alias target");
    if (find(target) == nullptr) r.error(at, "alias '", alias, "' names no variable ('", target, "')");
    aliases_.emplace_back(std::move(alias), std::move(target));
  }
  if (r.offset() != bytes_.size()) r.error(r.offset(), bytes_.size() - r.offset(), " bytes follow the model's end");
}

Ct2Model Ct2Model::assemble(std::string name, std::string spec_name, uint32_t spec_revision,
                            std::vector<Ct2OwnedVariable> variables,
                            std::vector<std::pair<std::string, std::string>> aliases) {
  Ct2Model m;
  m.path_ = std::move(name);
  m.version_ = kVersion;
  m.spec_name_ = std::move(spec_name);
  m.revision_ = spec_revision;
  m.variables_.reserve(variables.size());
  m.buffers_.reserve(variables.size());
  for (Ct2OwnedVariable& o : variables) {
    Ct2Variable v;
    v.name = std::move(o.name);
    v.shape = std::move(o.shape);
    v.type = o.type;
    v.blocks = o.blocks;
    uint64_t expected = 0;
    if (v.type == Ct2Type::Blocks) {
      const auto& block = info(v.blocks);
      const uint64_t rows = v.shape.empty() ? 0 : v.shape[0];
      const uint64_t cols = rows ? v.elements() / rows : 0;
      if (!block.quantized || rows == 0 || cols % block.block_size != 0)
        fail(m.path_, ": variable '", v.name, "' cannot be held in ", type_name(v.blocks), " blocks");
      expected = row_bytes(v.blocks, cols) * rows;
    } else {
      expected = ct2_type_size(v.type) * v.elements();
    }
    if (expected != o.bytes.size())
      fail(m.path_, ": variable '", v.name, "' holds ", o.bytes.size(), " bytes, but its shape and type need ", expected);
    v.bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(o.bytes.data()), o.bytes.size());
    m.buffers_.push_back(std::move(o.bytes));
    m.variables_.push_back(std::move(v));
  }
  for (auto& [alias, target] : aliases) {
    if (m.find(target) == nullptr) fail(m.path_, ": alias '", alias, "' names no variable ('", target, "')");
    m.aliases_.emplace_back(std::move(alias), std::move(target));
  }
  return m;
}

void Ct2Model::discard(const Ct2Variable& v) const {
  if (buffers_.empty()) return;
  const auto i = static_cast<size_t>(&v - variables_.data());
  RAYO_CHECK(i < buffers_.size(), "variable '", v.name, "' is not one of ", path_, "'s");
  buffers_[i].discard();
}

const Ct2Variable* Ct2Model::find(std::string_view name) const {
  for (const auto& v : variables_)
    if (v.name == name) return &v;
  for (const auto& [alias, target] : aliases_)
    if (alias == name) return find(target);
  return nullptr;
}

const Ct2Variable& Ct2Model::get(std::string_view name) const {
  const Ct2Variable* v = find(name);
  if (v == nullptr) fail(path_, ": no variable '", name, "'");
  return *v;
}

int64_t Ct2Model::integer(std::string_view name) const {
  const Ct2Variable& v = get(name);
  if (!v.shape.empty()) fail(path_, ": variable '", name, "' is not a scalar");
  switch (v.type) {
    case Ct2Type::I8: return static_cast<int8_t>(v.bytes[0]);
    case Ct2Type::I16: {
      int16_t x;
      std::memcpy(&x, v.bytes.data(), 2);
      return x;
    }
    case Ct2Type::I32: {
      int32_t x;
      std::memcpy(&x, v.bytes.data(), 4);
      return x;
    }
    default: fail(path_, ": variable '", name, "' is a ", ct2_type_name(v.type), ", not an integer");
  }
}

}  // namespace rayo::whisper
