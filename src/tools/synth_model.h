#pragma once
// Synthetic models: random weights with the exact shapes, tensor names,
// metadata and quantization mix of a real model, so that speed can be measured
// (and loaders tested) without downloading gigabytes. Values do not change
// speed; the blocks are drawn straight from a seeded PRNG with valid, small
// scales (weights roughly ±0.02, norms about 1), so writing runs at disk speed
// in bounded memory and the same seed always gives the same bytes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/writer.h"
#include "quant/tensor_type.h"

namespace rayo::tools {

struct SynthConfig {
  std::string arch;  // llama, qwen2, qwen3, gemma3
  std::string name;  // general.name
  uint32_t n_layers = 0, n_embd = 0, n_ff = 0, n_head = 0, n_head_kv = 0;
  uint32_t head_dim = 0;  // 0: n_embd / n_head
  uint32_t n_vocab = 0, n_ctx = 0;
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool tied_output = false;  // no output.weight
  bool qkv_bias = false;     // qwen2
  bool qk_norm = false;      // qwen3, gemma3
  // gemma3: sliding-window layers (gemma3.attention.sliding_window; 0: none),
  // their rope base when given (gemma3.rope.freq_base_swa; 0: not written,
  // llama.cpp's default 10 000), linear rope scaling of the global layers
  // (rope.scaling.factor; 0: none).
  uint32_t sliding_window = 0;
  float rope_freq_base_swa = 0.0f;
  float rope_scaling_factor = 0.0f;

  uint32_t effective_head_dim() const { return head_dim ? head_dim : n_embd / n_head; }
};

// Names accepted by synth_preset.
const std::vector<std::string_view>& synth_preset_names();

// The hyperparameters of a named model ("tinyllama-1.1b", "llama3-8b",
// "qwen2.5-0.5b", ...). "tiny" is a small model of architecture `arch`
// (default llama); for the others `arch`, when given, must match the model's.
SynthConfig synth_preset(std::string_view preset, std::optional<std::string_view> arch = std::nullopt);

// The file types `rayo synth --type` writes, named as llama.cpp names them.
enum class SynthFileType {
  F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K_M, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K, IQ4_NL, IQ4_XS
};
SynthFileType parse_synth_file_type(std::string_view name);  // "q4_k_m", ...; throws listing the choices
std::string_view synth_file_type_name(SynthFileType t);
uint32_t llama_ftype_id(SynthFileType t);  // general.file_type

// llama.cpp's choice of type for one tensor (llama_tensor_get_type, without an
// importance matrix, for dense models): 1-D tensors stay F32; the output matrix
// (token_embd when output is tied) gets Q6_K in the quantized types other than
// Q8_0; attn_v, attn_output and ffn_down get more bits by file type and layer
// (Q4_K_M: Q6_K on the "more bits" layers; Q3_K_M: Q5_K/Q4_K; Q2_K: Q3_K, or
// Q4_K for attn_v with n_gqa >= 4; ...); 256-value types fall back to
// Q4_0/Q5_0/Q5_1/Q8_0/IQ4_NL when a row is not a whole number of blocks.
TensorType synth_tensor_type(SynthFileType ftype, std::string_view name, uint32_t layer, uint32_t n_layers,
                             uint64_t row_length, bool has_output, uint32_t n_gqa = 1);

// llama.cpp's use_more_bits(i_layer, n_layers).
bool use_more_bits(uint32_t layer, uint32_t n_layers);

// Throws when the shapes cannot form a valid model of this type (heads not
// dividing, rows not whole blocks, ...).
void validate_synth_config(const SynthConfig& config, SynthFileType ftype);

// Metadata (hyperparameters and a SentencePiece-style tokenizer llama.cpp
// accepts) and tensor declarations, ready to write.
gguf::Writer synth_writer(const SynthConfig& config, SynthFileType ftype);

// Fills one tensor's bytes from (seed, tensor index), in chunks.
void synth_tensor_data(const gguf::WriterTensor& tensor, size_t index, uint64_t seed, gguf::TensorSink& out);

// Writes the whole model file.
void write_synth_model(const SynthConfig& config, SynthFileType ftype, uint64_t seed, const std::string& path,
                       const gguf::WriteProgress& progress = {});
// The same image in memory (tests).
std::vector<uint8_t> synth_model_bytes(const SynthConfig& config, SynthFileType ftype, uint64_t seed);

}  // namespace rayo::tools
