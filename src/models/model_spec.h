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
  std::string arch;             // general.architecture: "llama", "qwen2", "qwen3"
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
  float rms_eps = 1e-5f;            // ARCH.attention.layer_norm_rms_epsilon
  // What the architecture adds to the shared decoder (models/decoder.h); the
  // decoder builds exactly this, and a tensor it then lacks is an error.
  RopeType rope_type = RopeType::Normal;  // by architecture
  bool tied_output = false;  // no output.weight: the logits reuse token_embd.weight
  bool qkv_bias = false;     // attn_q/k/v.bias: required by qwen2, used by llama when present (as llama.cpp)
  bool qk_norm = false;      // per-head RMSNorm of q and k before rope (qwen3: attn_q_norm/attn_k_norm)

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
