#include "whisper/ggml_whisper_file.h"

#include <cerrno>
#include <cstring>
#include <limits>
#include <set>

#include "common/byte_reader.h"
#include "common/error.h"

namespace rayo::whisper {
namespace {

// Bounds that no real file comes near, so that sizes read from a damaged file
// cannot overflow the arithmetic below.
constexpr int32_t kMaxHparam = 1 << 20;
constexpr int32_t kMaxMelFilterSide = 1 << 14;
constexpr uint32_t kMaxTokenBytes = 1 << 12;
constexpr int32_t kMaxRank = 4;
constexpr int32_t kMaxNameBytes = 1 << 10;
constexpr uint64_t kMaxExtent = uint64_t{1} << 32;

int32_t positive(ByteReader& r, const char* what) {
  const uint64_t at = r.offset();
  const auto v = r.read<int32_t>(what);
  if (v <= 0 || v > kMaxHparam) r.error(at, what, " is ", v, ", not a size between 1 and ", kMaxHparam);
  return v;
}

}  // namespace

uint64_t GgmlTensor::elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

GgmlWhisperFile GgmlWhisperFile::open(const std::string& path) {
  GgmlWhisperFile f;
  f.path_ = path;
  f.mapping_ = MappedFile(path);
  f.bytes_ = f.mapping_.bytes();
  f.parse();
  return f;
}

GgmlWhisperFile GgmlWhisperFile::from_bytes(std::vector<uint8_t> bytes, std::string name) {
  GgmlWhisperFile f;
  f.path_ = std::move(name);
  f.owned_ = std::move(bytes);
  f.bytes_ = std::span<const uint8_t>(f.owned_.data(), f.owned_.size());
  f.parse();
  return f;
}

bool GgmlWhisperFile::has_magic(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return false;
  uint32_t magic = 0;
  const bool read = std::fread(&magic, 4, 1, file) == 1;
  std::fclose(file);
  return read && magic == kGgmlMagic;
}

const GgmlTensor* GgmlWhisperFile::find(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

void GgmlWhisperFile::parse() {
  ByteReader r(path_, bytes_);
  const uint32_t magic = r.read<uint32_t>("the magic");
  if (magic == 0x46554747)  // "GGUF"
    r.error(0, "a GGUF file, not a whisper.cpp model (rayo reads language models from GGUF files: rayo run)");
  if (magic != kGgmlMagic) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", magic);
    r.error(0, "not a whisper.cpp ggml model (magic ", hex, ")");
  }

  GgmlWhisperHparams& h = hparams_;
  h.n_vocab = positive(r, "n_vocab");
  h.n_audio_ctx = positive(r, "n_audio_ctx");
  h.n_audio_state = positive(r, "n_audio_state");
  h.n_audio_head = positive(r, "n_audio_head");
  h.n_audio_layer = positive(r, "n_audio_layer");
  h.n_text_ctx = positive(r, "n_text_ctx");
  h.n_text_state = positive(r, "n_text_state");
  h.n_text_head = positive(r, "n_text_head");
  h.n_text_layer = positive(r, "n_text_layer");
  h.n_mels = positive(r, "n_mels");
  const uint64_t ftype_at = r.offset();
  h.ftype = r.read<int32_t>("ftype");
  if (h.ftype < 0) r.error(ftype_at, "ftype ", h.ftype, " is negative");

  const uint64_t mel_at = r.offset();
  n_mel_ = r.read<int32_t>("the mel filters' row count");
  n_fft_ = r.read<int32_t>("the mel filters' column count");
  if (n_mel_ < 0 || n_fft_ < 0 || n_mel_ > kMaxMelFilterSide || n_fft_ > kMaxMelFilterSide)
    r.error(mel_at, "mel filters of ", n_mel_, " x ", n_fft_, " values");
  r.take(uint64_t{4} * static_cast<uint64_t>(n_mel_) * static_cast<uint64_t>(n_fft_), "the mel filter values");

  const uint64_t vocab_at = r.offset();
  const int32_t n_tokens = r.read<int32_t>("the vocabulary size");
  if (n_tokens < 0 || n_tokens > h.n_vocab)
    r.error(vocab_at, "a vocabulary of ", n_tokens, " tokens for a model of ", h.n_vocab);
  tokens_.reserve(static_cast<size_t>(n_tokens));
  for (int32_t i = 0; i < n_tokens; ++i) {
    const uint64_t at = r.offset();
    const uint32_t length = r.read<uint32_t>("a token's length");
    if (length > kMaxTokenBytes) r.error(at, "token ", i, " is ", length, " bytes long");
    const auto bytes = r.take(length, "a token");
    tokens_.emplace_back(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }

  std::set<std::string_view> names;
  while (!r.at_end()) {
    const uint64_t at = r.offset();
    const int32_t rank = r.read<int32_t>("a tensor's rank");
    const int32_t name_length = r.read<int32_t>("a tensor's name length");
    const uint32_t type_id = r.read<uint32_t>("a tensor's type");
    if (rank < 1 || rank > kMaxRank) r.error(at, "a tensor of rank ", rank);
    if (name_length < 1 || name_length > kMaxNameBytes) r.error(at, "a tensor name of ", name_length, " bytes");
    GgmlTensor t;
    t.shape.resize(static_cast<size_t>(rank));
    for (int32_t d = 0; d < rank; ++d) {
      const int32_t extent = r.read<int32_t>("a tensor's extent");
      if (extent < 1) r.error(at, "a tensor extent of ", extent);
      t.shape[static_cast<size_t>(rank - 1 - d)] = static_cast<uint64_t>(extent);  // innermost first in the file
    }
    const auto name = r.take(static_cast<uint64_t>(name_length), "a tensor name");
    t.name.assign(reinterpret_cast<const char*>(name.data()), name.size());
    const auto info = tensor_type_info(type_id);
    if (!info) r.error(at, "tensor '", t.name, "' has unknown ggml type ", type_id);
    t.type = info->type;
    const uint64_t row = t.shape.back();
    if (row % info->block_size != 0)
      r.error(at, "tensor '", t.name, "' has rows of ", row, " values, not whole ", info->block_size, "-value blocks");
    uint64_t elements = 1;
    for (uint64_t d : t.shape) {
      elements *= d;
      if (elements > kMaxExtent * 16) r.error(at, "tensor '", t.name, "' is too large");
    }
    t.offset = r.offset();
    t.bytes = r.take(elements / info->block_size * info->block_bytes, "a tensor's data");
    tensors_.push_back(std::move(t));
  }
  for (const auto& t : tensors_)
    if (!names.insert(t.name).second) fail(path_, ": tensor '", t.name, "' appears twice");
}

// ---- Writing ----------------------------------------------------------------

GgmlWhisperWriter::GgmlWhisperWriter(const std::string& path, const GgmlWhisperHparams& h,
                                     std::span<const float> mel_filters, int32_t n_mel, int32_t n_fft,
                                     std::span<const std::string> tokens)
    : path_(path) {
  RAYO_CHECK(mel_filters.size() == static_cast<size_t>(n_mel) * static_cast<size_t>(n_fft), "mel filters");
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) fail(path, ": cannot create (", std::strerror(errno), ")");
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  write(&kGgmlMagic, 4);
  for (int32_t v : {h.n_vocab, h.n_audio_ctx, h.n_audio_state, h.n_audio_head, h.n_audio_layer, h.n_text_ctx,
                    h.n_text_state, h.n_text_head, h.n_text_layer, h.n_mels, h.ftype})
    write(&v, 4);
  write(&n_mel, 4);
  write(&n_fft, 4);
  write(mel_filters.data(), mel_filters.size_bytes());
  const auto n_tokens = static_cast<int32_t>(tokens.size());
  write(&n_tokens, 4);
  for (const std::string& token : tokens) {
    const auto length = static_cast<uint32_t>(token.size());
    write(&length, 4);
    write(token.data(), token.size());
  }
}

GgmlWhisperWriter::~GgmlWhisperWriter() {
  if (file_ == nullptr) return;
  // Unfinished (an exception is on its way): leave no truncated model behind.
  std::fclose(file_);
  std::remove(path_.c_str());
}

void GgmlWhisperWriter::write(const void* data, size_t n) {
  if (std::fwrite(data, 1, n, file_) != n) fail(path_, ": write failed (", std::strerror(errno), ")");
  size_ += n;
}

void GgmlWhisperWriter::add(std::string_view name, std::span<const uint64_t> shape, TensorType type,
                            std::span<const uint8_t> bytes) {
  RAYO_CHECK(!shape.empty() && shape.size() <= static_cast<size_t>(kMaxRank), "rank ", shape.size());
  uint64_t elements = 1;
  for (uint64_t d : shape) elements *= d;
  RAYO_CHECK(shape.back() % info(type).block_size == 0, name, ": rows of ", shape.back());
  RAYO_CHECK(row_bytes(type, elements) == bytes.size(), name, ": ", bytes.size(), " bytes for ", elements, " values");
  const auto rank = static_cast<int32_t>(shape.size());
  const auto name_length = static_cast<int32_t>(name.size());
  const auto type_id = static_cast<uint32_t>(type);
  write(&rank, 4);
  write(&name_length, 4);
  write(&type_id, 4);
  for (size_t d = shape.size(); d-- > 0;) {
    const auto extent = static_cast<int32_t>(shape[d]);
    write(&extent, 4);
  }
  write(name.data(), name.size());
  write(bytes.data(), bytes.size());
}

uint64_t GgmlWhisperWriter::finish() {
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (closed != 0) fail(path_, ": write failed (", std::strerror(errno), ")");
  return size_;
}

}  // namespace rayo::whisper
