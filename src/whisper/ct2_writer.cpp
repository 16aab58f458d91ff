#include "whisper/ct2_writer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/half.h"

namespace rayo::whisper {

// ---- model.bin, version 6 --------------------------------------------------

namespace {
constexpr uint32_t kBinaryVersion = 6;  // what CTranslate2 3.x and 4.x write, and Ct2Model reads
}

Ct2ModelWriter::Ct2ModelWriter(const std::string& path, std::string_view spec_name, uint32_t spec_revision,
                               uint32_t n_variables)
    : path_(path), expected_(n_variables) {
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) fail(path, ": cannot create (", std::strerror(errno), ")");
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  write(&kBinaryVersion, 4);
  write_string(spec_name);
  write(&spec_revision, 4);
  write(&n_variables, 4);
}

Ct2ModelWriter::~Ct2ModelWriter() {
  if (file_ == nullptr) return;
  // Unfinished (an exception is on its way): leave no truncated model behind.
  std::fclose(file_);
  std::remove(path_.c_str());
}

void Ct2ModelWriter::write(const void* data, size_t n) {
  if (std::fwrite(data, 1, n, file_) != n) fail(path_, ": write failed (", std::strerror(errno), ")");
  size_ += n;
}

// A u16 length counting the trailing NUL, the characters, the NUL.
void Ct2ModelWriter::write_string(std::string_view s) {
  if (s.size() + 1 > std::numeric_limits<uint16_t>::max()) fail(path_, ": name too long: ", s.substr(0, 80), "...");
  const uint16_t length = static_cast<uint16_t>(s.size() + 1);
  write(&length, 2);
  write(s.data(), s.size());
  write("", 1);
}

void Ct2ModelWriter::add(std::string_view name, std::span<const uint32_t> shape, Ct2Type type,
                         std::span<const uint8_t> bytes) {
  RAYO_CHECK(written_ < expected_, "more variables than the ", expected_, " announced");
  uint64_t n_bytes = ct2_type_size(type);
  for (uint32_t d : shape) n_bytes *= d;
  RAYO_CHECK(n_bytes == bytes.size(), "variable '", name, "' has ", bytes.size(), " bytes for ", n_bytes);
  if (n_bytes > std::numeric_limits<uint32_t>::max())
    fail(path_, ": variable '", name, "' holds ", n_bytes, " bytes, more than model.bin's 32-bit sizes allow");
  RAYO_CHECK(shape.size() <= 8, "rank ", shape.size());
  write_string(name);
  const uint8_t rank = static_cast<uint8_t>(shape.size());
  write(&rank, 1);
  for (uint32_t d : shape) write(&d, 4);
  const uint8_t type_id = static_cast<uint8_t>(type);
  write(&type_id, 1);
  const uint32_t size32 = static_cast<uint32_t>(n_bytes);
  write(&size32, 4);
  write(bytes.data(), bytes.size());
  ++written_;
}

uint64_t Ct2ModelWriter::finish(std::span<const std::pair<std::string, std::string>> aliases) {
  RAYO_CHECK(written_ == expected_, written_, " variables written, ", expected_, " announced");
  const uint32_t n_aliases = static_cast<uint32_t>(aliases.size());
  write(&n_aliases, 4);
  for (const auto& [alias, target] : aliases) {
    write_string(alias);
    write_string(target);
  }
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (closed != 0) fail(path_, ": write failed (", std::strerror(errno), ")");
  return size_;
}

// ---- What a converted Whisper model holds ---------------------------------

std::vector<PlannedVariable> plan_whisper_variables(const WhisperPreset& p) {
  const uint32_t d = p.n_state, ffn = p.n_ffn();
  std::vector<PlannedVariable> v;
  auto scalar = [&](std::string name, Ct2Type type, int64_t value) {
    v.push_back({std::move(name), {}, type, Fill::Scalar, value});
  };
  auto tensor = [&](std::string name, std::vector<uint32_t> shape, Fill fill) {
    v.push_back({std::move(name), std::move(shape), Ct2Type::F16, fill});
  };
  auto layer_norm = [&](const std::string& prefix) {
    tensor(prefix + "/beta", {d}, Fill::Bias);
    tensor(prefix + "/gamma", {d}, Fill::Scale);
  };
  // A projection to `out` from `in`; the bias' elements [zero_begin, zero_end) are 0.
  auto linear = [&](const std::string& prefix, uint32_t out, uint32_t in, uint64_t zero_begin = 0,
                    uint64_t zero_end = 0) {
    tensor(prefix + "/weight", {out, in}, Fill::Weight);
    tensor(prefix + "/bias", {out}, Fill::Bias);
    v.back().zero_begin = zero_begin;
    v.back().zero_end = zero_end;
  };
  auto self_attention = [&](const std::string& prefix) {
    layer_norm(prefix + "/layer_norm");
    linear(prefix + "/linear_0", 3 * d, d, d, 2 * d);  // Q, K, V fused
    linear(prefix + "/linear_1", d, d);                // output
  };
  auto ffn_block = [&](const std::string& prefix) {
    layer_norm(prefix + "/layer_norm");
    linear(prefix + "/linear_0", ffn, d);
    linear(prefix + "/linear_1", d, ffn);
  };

  // The decoder. The scalars say what CTranslate2's transformer decoder does:
  // GELU (its Activation enum's 3), no ALiBi, pre-norm, embeddings not scaled,
  // one alignment head over every layer (-1) unless asked, the head count.
  scalar("decoder/activation", Ct2Type::I8, 3);
  scalar("decoder/alibi", Ct2Type::I8, 0);
  scalar("decoder/alignment_heads", Ct2Type::I16, 1);
  scalar("decoder/alignment_layer", Ct2Type::I16, -1);
  scalar("decoder/num_heads", Ct2Type::I16, p.n_head);
  scalar("decoder/pre_norm", Ct2Type::I8, 1);
  scalar("decoder/scale_embeddings", Ct2Type::I8, 0);
  scalar("decoder/start_from_zero_embedding", Ct2Type::I8, 0);
  tensor("decoder/embeddings/weight", {p.vocabulary.n_vocab(), d}, Fill::Weight);
  for (uint32_t l = 0; l < p.decoder_layers(); ++l) {
    const std::string layer = "decoder/layer_" + std::to_string(l);
    layer_norm(layer + "/attention/layer_norm");  // cross-attention over the encoder output
    linear(layer + "/attention/linear_0", d, d);              // Q
    linear(layer + "/attention/linear_1", 2 * d, d, 0, d);    // K, V fused
    linear(layer + "/attention/linear_2", d, d);              // output
    ffn_block(layer + "/ffn");
    self_attention(layer + "/self_attention");
  }
  layer_norm("decoder/layer_norm");
  tensor("decoder/position_encodings/encodings", {p.n_text_ctx, d}, Fill::Weight);  // learned

  // The encoder: two convolutions (kernel 3) over the mel bins, then the blocks.
  auto conv = [&](const std::string& prefix, uint32_t in) {
    tensor(prefix + "/weight", {d, in, 3}, Fill::Weight);
    tensor(prefix + "/bias", {d}, Fill::Bias);
  };
  conv("encoder/conv1", p.n_mels);
  conv("encoder/conv2", d);
  for (uint32_t l = 0; l < p.n_layer; ++l) {
    const std::string layer = "encoder/layer_" + std::to_string(l);
    ffn_block(layer + "/ffn");
    self_attention(layer + "/self_attention");
  }
  layer_norm("encoder/layer_norm");
  scalar("encoder/num_heads", Ct2Type::I16, p.n_head);
  tensor("encoder/position_encodings/encodings", {p.n_audio_ctx, d}, Fill::Sinusoid);

  // CTranslate2 writes its variables sorted by name (Python's string order, byte-wise here).
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return v;
}

namespace {

// splitmix64: a fast generator whose every seed gives a good stream.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Each variable draws from its own stream, seeded by the seed and its name, so
// that its bytes do not depend on which variables come before it.
uint64_t variable_seed(uint64_t seed, std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  uint64_t state = seed ^ h;
  return splitmix64(state);
}

// Whisper's sinusoids(length, channels): sin in the first half of the
// channels, cos in the second, timescales from 1 to 10000.
float sinusoid(uint64_t position, uint64_t channel, uint64_t channels) {
  const uint64_t half = channels / 2;
  const double increment = std::log(10000.0) / static_cast<double>(half - 1);
  const uint64_t i = channel % half;
  const double t = static_cast<double>(position) * std::exp(-increment * static_cast<double>(i));
  return static_cast<float>(channel < half ? std::sin(t) : std::cos(t));
}

// The variable's bytes (float16 tensors, or an integer scalar).
void fill_variable(const PlannedVariable& v, uint64_t seed, std::vector<uint8_t>& out) {
  uint64_t elements = 1;
  for (uint32_t d : v.shape) elements *= d;
  out.resize(elements * ct2_type_size(v.type));
  if (v.fill == Fill::Scalar) {
    // Little-endian, like the hosts model.bin is read on; one element of 1, 2 or 4 bytes.
    const int64_t x = v.scalar;
    std::memcpy(out.data(), &x, out.size());
    return;
  }
  RAYO_CHECK(v.type == Ct2Type::F16);
  uint16_t* h = reinterpret_cast<uint16_t*>(out.data());
  if (v.fill == Fill::Sinusoid) {
    const uint64_t channels = v.shape[1];
    for (uint64_t i = 0; i < elements; ++i) h[i] = fp32_to_fp16(sinusoid(i / channels, i % channels, channels));
    return;
  }
  const float amplitude = v.fill == Fill::Weight ? 0.02f : 0.01f;
  const float offset = v.fill == Fill::Scale ? 1.0f : 0.0f;
  uint64_t state = variable_seed(seed, v.name);
  uint64_t bits = 0;
  for (uint64_t i = 0; i < elements; ++i) {
    if (i % 4 == 0) bits = splitmix64(state);  // four 16-bit draws a call: enough for float16
    const auto r = static_cast<int16_t>(static_cast<uint16_t>(bits >> (16 * (i % 4))));
    const float value = (i >= v.zero_begin && i < v.zero_end) ? 0.0f : offset + amplitude * (r / 32768.0f);
    h[i] = fp32_to_fp16(value);
  }
}

// Made-up ordinary tokens: "Ġa", "Ġb", ... "Ġz", "Ġaa", ... (a space, then a
// word), distinct from each other and from the byte symbols, and each readable
// as byte-level BPE, so that whatever a random model emits decodes to text.
std::string made_up_token(uint64_t k) {
  std::string word;
  for (++k; k > 0; k = (k - 1) / 26) word.insert(word.begin(), static_cast<char>('a' + (k - 1) % 26));
  return "\xC4\xA0" + word;  // U+0120 'Ġ', byte-level BPE's space
}

std::string utf8(uint32_t c) {
  std::string s;
  if (c < 0x80) {
    s.push_back(static_cast<char>(c));
  } else {  // byte symbols are below U+0800: two bytes
    s.push_back(static_cast<char>(0xC0 | (c >> 6)));
    s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
  return s;
}

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path.string(), ": cannot create (", std::strerror(errno), ")");
  out << text;
  out.close();
  if (!out) fail(path.string(), ": write failed");
}

}  // namespace

std::vector<std::string> whisper_vocabulary(const WhisperVocabularyLayout& layout) {
  std::vector<std::string> tokens;
  tokens.reserve(layout.n_vocab());
  // Ids 0-255: GPT-2's byte symbols (its bytes_to_unicode, in its order): the
  // printable bytes stand for themselves, the other bytes for U+0100 onwards.
  auto printable = [](uint32_t b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); };
  for (uint32_t b = 0; b < 256; ++b)
    if (printable(b)) tokens.push_back(utf8(b));
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b)
    if (!printable(b)) tokens.push_back(utf8(next++));
  // A multilingual base vocabulary ends with an empty token: CTranslate2
  // (4.8.5) takes a vocabulary.txt holding one for a multilingual model's.
  const size_t ordinary = static_cast<size_t>(layout.eot()) - (layout.english_only ? 0 : 1);
  while (tokens.size() < ordinary) tokens.push_back(made_up_token(tokens.size() - 256));
  if (!layout.english_only) tokens.push_back("");

  tokens.push_back("<|endoftext|>");
  tokens.push_back("<|startoftranscript|>");
  const auto languages = whisper_languages();
  for (uint32_t i = 0; i < layout.n_languages; ++i) {
    // Hebrew's token keeps its old code in the Hugging Face vocabularies that
    // CTranslate2 converts (the real tiny.en's vocabulary.txt has <|iw|>).
    const std::string_view code = languages[i].code == "he" ? "iw" : languages[i].code;
    tokens.push_back(cat("<|", code, "|>"));
  }
  for (const char* special : {"<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>"})
    tokens.push_back(special);
  tokens.push_back(std::string(layout.no_speech_text));
  tokens.push_back("<|notimestamps|>");
  for (int32_t i = 0; i < WhisperVocabularyLayout::kTimestamps; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "<|%.2f|>", i * 0.02);  // as openai-whisper's f"<|{i * 0.02:.2f}|>"
    tokens.push_back(buf);
  }
  RAYO_CHECK(tokens.size() == layout.n_vocab(), tokens.size(), " tokens for ", layout.n_vocab());
  return tokens;
}

std::string whisper_config_json(const WhisperPreset& preset) {
  // nlohmann::json keeps keys sorted and dump(2) lays lists out one item a
  // line, as Python's json.dump(indent=2, sort_keys=True) in the converter does.
  nlohmann::json config;
  config["alignment_heads"] = nlohmann::json::array();
  for (const auto& [layer, head] : preset.alignment_heads) config["alignment_heads"].push_back({layer, head});
  config["lang_ids"] = preset.vocabulary.lang_ids();
  config["suppress_ids"] = preset.vocabulary.suppress_ids();
  config["suppress_ids_begin"] = preset.vocabulary.suppress_ids_begin();
  return config.dump(2) + "\n";
}

uint64_t write_ct2_whisper(const WhisperPreset& preset, uint64_t seed, const std::string& folder,
                           const Ct2WriteProgress& progress) {
  const std::filesystem::path dir(folder);
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
    fail(folder, ": exists and is not a folder (a CTranslate2 model is a folder)");
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(folder, ": cannot create the folder (", ec.message(), ")");

  std::string vocabulary;
  for (const std::string& token : whisper_vocabulary(preset.vocabulary)) vocabulary += token + "\n";
  write_text_file(dir / "vocabulary.txt", vocabulary);
  write_text_file(dir / "config.json", whisper_config_json(preset));

  const std::vector<PlannedVariable> variables = plan_whisper_variables(preset);
  uint64_t total = 0;
  for (const auto& v : variables) {
    uint64_t n = ct2_type_size(v.type);
    for (uint32_t d : v.shape) n *= d;
    total += n;
  }
  Ct2ModelWriter writer((dir / "model.bin").string(), "WhisperSpec", 3, static_cast<uint32_t>(variables.size()));
  std::vector<uint8_t> bytes;
  uint64_t done = 0;
  for (const auto& v : variables) {
    fill_variable(v, seed, bytes);
    writer.add(v.name, v.shape, v.type, bytes);
    done += bytes.size();
    if (progress) progress(done, total);
  }
  // The output projection is the token embedding (Whisper ties them).
  const std::pair<std::string, std::string> aliases[] = {{"decoder/projection/weight", "decoder/embeddings/weight"}};
  return writer.finish(aliases);
}

}  // namespace rayo::whisper
