#pragma once
// Writes CTranslate2 Whisper folders as faster-whisper's users have them
// (model.bin, config.json, vocabulary.txt) with random weights of a real
// model's shapes: `rayo synth --whisper`, for benchmarks of sizes nobody has
// to download and for tests of multilingual and 128-mel models.
//
// model.bin is binary version 6 in exactly the layout Ct2Model reads
// (ct2_model.h), with every variable the converted model has, under the same
// names, in the same order (sorted by name, as CTranslate2 writes them), with
// the same types: float16 weights, the int8/int16 scalars of CTranslate2's
// WhisperSpec (activation GELU = 3, pre_norm, num_heads, alignment heads ...),
// and the alias decoder/projection/weight -> decoder/embeddings/weight. A
// written tiny.en matches the real file's listing variable for variable, offsets
// included.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "whisper/ct2_model.h"
#include "whisper/whisper_presets.h"

namespace rayo::whisper {

// Writes a model.bin front to back, a variable at a time, so that a 3 GB
// large-v3 never sits in memory whole. Throws rayo::Error naming the file when
// it cannot be written or when the calls do not match the announced count.
class Ct2ModelWriter {
 public:
  Ct2ModelWriter(const std::string& path, std::string_view spec_name, uint32_t spec_revision, uint32_t n_variables);
  ~Ct2ModelWriter();
  Ct2ModelWriter(const Ct2ModelWriter&) = delete;
  Ct2ModelWriter& operator=(const Ct2ModelWriter&) = delete;

  // `bytes` must hold exactly the shape's elements of `type`, little-endian.
  void add(std::string_view name, std::span<const uint32_t> shape, Ct2Type type, std::span<const uint8_t> bytes);
  // Writes the (alias, target) pairs and closes the file; returns its size in bytes.
  uint64_t finish(std::span<const std::pair<std::string, std::string>> aliases);

 private:
  void write(const void* data, size_t n);
  void write_string(std::string_view s);

  std::string path_;
  std::FILE* file_ = nullptr;
  uint32_t expected_ = 0, written_ = 0;
  uint64_t size_ = 0;
};

// How a planned variable's values are made up (by write_ct2_whisper).
enum class Fill {
  Scalar,    // an integer flag or count of CTranslate2's WhisperSpec
  Weight,    // small values around 0
  Bias,      // smaller values around 0
  Scale,     // LayerNorm gamma: around 1, so that activations keep their size
  Sinusoid,  // the encoder's positions, fixed sinusoids in every real model
};

// One variable of a converted Whisper model.
struct PlannedVariable {
  std::string name;
  std::vector<uint32_t> shape;
  Ct2Type type = Ct2Type::F16;
  Fill fill = Fill::Weight;
  int64_t scalar = 0;
  // Elements [zero_begin, zero_end) are 0: Whisper's key projections have no
  // bias, so the fused Q/K/V (and cross-attention K/V) biases hold zeros for K.
  uint64_t zero_begin = 0, zero_end = 0;
};

// Every variable of CTranslate2's WhisperSpec (revision 3) for a preset's
// sizes, in the order model.bin stores them (sorted by name): what
// write_ct2_whisper writes, and what a whisper.cpp file is read into.
std::vector<PlannedVariable> plan_whisper_variables(const WhisperPreset& preset);

// Writes `folder` (created if needed; the three files are replaced) with the
// preset's shapes and weights drawn from `seed` (same seed, same bytes): small
// values around 0, LayerNorm scales around 1, the encoder's fixed sinusoidal
// positions. The vocabulary has the real special tokens at their real ids; the
// ordinary tokens are the 256 byte symbols and made-up words (and, in a
// multilingual vocabulary, an empty token before <|endoftext|>: CTranslate2
// 4.8.5 tells a multilingual model by an empty token, not by the size). `progress` gets
// (bytes written, total) of model.bin. Returns model.bin's size.
using Ct2WriteProgress = std::function<void(uint64_t done, uint64_t total)>;
uint64_t write_ct2_whisper(const WhisperPreset& preset, uint64_t seed, const std::string& folder,
                           const Ct2WriteProgress& progress = {});

// The lines of vocabulary.txt for this layout (id = line number).
std::vector<std::string> whisper_vocabulary(const WhisperVocabularyLayout& layout);
// config.json as CTranslate2's converter writes it for this preset.
std::string whisper_config_json(const WhisperPreset& preset);

}  // namespace rayo::whisper
