#pragma once
// whisper.cpp's model files (ggml-*.bin), as its convert-pt-to-ggml.py and
// quantize tools write them, little-endian throughout:
//   u32 magic 0x67676d6c ("ggml" read as a number);
//   11 i32 hyperparameters (GgmlWhisperHparams, in that order);
//   the mel filters: i32 n_mel, i32 n_fft, then n_mel x n_fft f32;
//   the vocabulary: i32 count, then per token a u32 length and its raw bytes
//     (GPT-2's ordinary tokens in id order; whisper.cpp names the special
//     tokens after them itself);
//   tensors up to the end of the file: i32 rank, i32 name length, i32 ggml
//     type id, the extents innermost first, the name, the data (unpadded).
// Tensor names are openai-whisper's PyTorch names
// ("encoder.blocks.0.attn.query.weight"). The whole file is checked when it
// is opened, so that a truncated or malformed file is refused in one line
// naming the offset; tensors are views into the mapped file.
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/mapped_file.h"
#include "quant/tensor_type.h"

namespace rayo::whisper {

inline constexpr uint32_t kGgmlMagic = 0x67676d6c;
// A quantized file's ftype is ggml's file type plus this times the
// quantization version (whisper.cpp's GGML_QNT_VERSION_FACTOR).
inline constexpr int32_t kGgmlQuantVersionFactor = 1000;

struct GgmlWhisperHparams {
  int32_t n_vocab = 0;
  int32_t n_audio_ctx = 0, n_audio_state = 0, n_audio_head = 0, n_audio_layer = 0;
  int32_t n_text_ctx = 0, n_text_state = 0, n_text_head = 0, n_text_layer = 0;
  int32_t n_mels = 0;
  int32_t ftype = 0;  // 0 f32, 1 f16, else a quantized file type (see kGgmlQuantVersionFactor)
};

struct GgmlTensor {
  std::string name;
  TensorType type = TensorType::F32;
  std::vector<uint64_t> shape;  // outermost first, as PyTorch has it (the file stores it reversed)
  uint64_t offset = 0;          // of the first data byte, in the file
  std::span<const uint8_t> bytes;

  uint64_t elements() const;
};

class GgmlWhisperFile {
 public:
  // Maps and checks `path`. Throws rayo::Error "PATH: REASON (at offset N)".
  static GgmlWhisperFile open(const std::string& path);
  // Checks an in-memory image (tests, fuzzing); the file keeps its own copy.
  static GgmlWhisperFile from_bytes(std::vector<uint8_t> bytes, std::string name = "<memory>");
  // Whether the file at `path` starts with the magic (false when it cannot be read).
  static bool has_magic(const std::string& path);

  const std::string& path() const { return path_; }
  const GgmlWhisperHparams& hparams() const { return hparams_; }
  int32_t mel_filter_rows() const { return n_mel_; }
  int32_t mel_filter_cols() const { return n_fft_; }
  // The ordinary tokens' raw bytes, id order.
  const std::vector<std::string>& tokens() const { return tokens_; }
  const std::vector<GgmlTensor>& tensors() const { return tensors_; }
  // The tensor called `name`, or null.
  const GgmlTensor* find(std::string_view name) const;

 private:
  GgmlWhisperFile() = default;
  void parse();

  std::string path_;
  MappedFile mapping_;
  std::vector<uint8_t> owned_;
  std::span<const uint8_t> bytes_;
  GgmlWhisperHparams hparams_;
  int32_t n_mel_ = 0, n_fft_ = 0;
  std::vector<std::string> tokens_;
  std::vector<GgmlTensor> tensors_;
};

// Writes a ggml Whisper file front to back, a tensor at a time. Throws
// rayo::Error naming the file when it cannot be written; an unfinished file is
// removed.
class GgmlWhisperWriter {
 public:
  // mel_filters: n_mel x n_fft values, row-major; tokens: raw bytes, id order.
  GgmlWhisperWriter(const std::string& path, const GgmlWhisperHparams& hparams, std::span<const float> mel_filters,
                    int32_t n_mel, int32_t n_fft, std::span<const std::string> tokens);
  ~GgmlWhisperWriter();
  GgmlWhisperWriter(const GgmlWhisperWriter&) = delete;
  GgmlWhisperWriter& operator=(const GgmlWhisperWriter&) = delete;

  // `shape` outermost first; `bytes` hold exactly its elements in `type`.
  void add(std::string_view name, std::span<const uint64_t> shape, TensorType type, std::span<const uint8_t> bytes);
  // Closes the file; returns its size in bytes.
  uint64_t finish();

 private:
  void write(const void* data, size_t n);

  std::string path_;
  std::FILE* file_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace rayo::whisper
