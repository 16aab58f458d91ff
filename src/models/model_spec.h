#pragma once
// The hyperparameters the engine needs, read from a GGUF file's metadata with
// llama.cpp's key names ("<arch>.block_count", ...), checked for consistency
// with each other and with the token embedding's shape. One struct for every
// supported architecture; fields an architecture lacks keep neutral values.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "graph/graph.h"

namespace rayo::models {

// How rotary embeddings pair dimensions: Normal rotates (2i, 2i+1) (llama),
// NeoX rotates (i, i + rope_dim/2) (qwen2, qwen3).
using RopeType = graph::RopeType;
std::string_view rope_type_name(RopeType t);  // "normal", "neox"

struct ModelSpec {
  std::string arch;             // general.architecture: "llama", "qwen2", "qwen3", "gemma3"
  uint32_t n_layers = 0;        // ARCH.block_count
  uint32_t n_embd = 0;          // ARCH.embedding_length
  uint32_t n_ff = 0;            // ARCH.feed_forward_length
  uint32_t n_head = 0;          // ARCH.attention.head_count
  uint32_t n_head_kv = 0;       // ARCH.attention.head_count_kv (default n_head)
  uint32_t head_dim = 0;        // ARCH.attention.key_length, else n_embd / n_head
  uint32_t head_dim_v = 0;      // ARCH.attention.value_length, else head_dim
  uint32_t rope_dim = 0;        // ARCH.rope.dimension_count, else head_dim
  uint32_t n_vocab = 0;         // tokenizer.ggml.tokens size (else ARCH.vocab_size, else token_embd rows)
  uint32_t n_ctx_train = 0;     // ARCH.context_length (default 2048)
  float rope_freq_base = 10000.0f;  // ARCH.rope.freq_base
  float rope_freq_scale = 1.0f;     // 1 / ARCH.rope.scaling.factor (linear scaling), else 1
  float rms_eps = 1e-5f;            // ARCH.attention.layer_norm_rms_epsilon
  // What the architecture adds to the shared decoder (models/decoder.h); the
  // decoder builds exactly this, and a tensor it then lacks is an error.
  RopeType rope_type = RopeType::Normal;  // by architecture
  bool tied_output = false;  // no output.weight: the logits reuse token_embd.weight
  bool qkv_bias = false;     // attn_q/k/v.bias: required by qwen2, used by llama when present (as llama.cpp)
  bool qk_norm = false;      // per-head RMSNorm of q and k before rope (qwen3, gemma3: attn_q_norm/attn_k_norm)
  // Gemma 3: RMSNorm of the attention's and the FFN's outputs before each
  // residual add (attn_post_norm, ffn_post_norm), GELU-tanh gate, embeddings
  // times √n_embd, its own attention scale.
  bool post_norms = false;
  graph::Activation ffn_act = graph::Activation::Silu;
  float embedding_scale = 1.0f;
  float attention_scale = 0.0f;  // q·k multiplier; 0: 1/√head_dim
  // Sliding-window attention (gemma3): layer l sees the last `sliding_window`
  // positions when is_sliding(l): every layer but each `sliding_window_pattern`-th
  // (ARCH.attention.sliding_window, ARCH.attention.sliding_window_pattern,
  // default 6 as llama.cpp). Those layers rotate with their own base
  // (ARCH.rope.freq_base_swa, default 10 000) and no scaling. 0: none.
  uint32_t sliding_window = 0;
  uint32_t sliding_window_pattern = 0;
  float rope_freq_base_swa = 10000.0f;

  bool is_sliding(uint32_t layer) const {
    return sliding_window > 0 && (sliding_window_pattern == 0 || layer % sliding_window_pattern < sliding_window_pattern - 1);
  }

  uint32_t n_gqa() const { return n_head / n_head_kv; }  // query heads per KV head
  uint32_t q_dim() const { return n_head * head_dim; }
  uint32_t kv_dim() const { return n_head_kv * head_dim; }

  // Reads and checks the spec. Throws rayo::Error naming the file and the key or
  // tensor at fault; an architecture rayo cannot run is refused by name.
  static ModelSpec from_gguf(const gguf::File& file);
};

// Architectures from_gguf accepts.
const std::vector<std::string_view>& supported_architectures();

// llama.cpp's metadata key for an architecture: arch_key("qwen2", "block_count")
// == "qwen2.block_count".
std::string arch_key(std::string_view arch, std::string_view suffix);

}  // namespace rayo::models
