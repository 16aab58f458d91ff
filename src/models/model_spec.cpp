#include "models/model_spec.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.h"

namespace rayo::models {

std::string_view rope_type_name(RopeType t) { return t == RopeType::NeoX ? "neox" : "normal"; }

namespace {
// How each supported architecture differs from the plain decoder: the one
// place that knows it.
struct ArchTraits {
  std::string_view name;
  RopeType rope;
  bool qkv_bias;  // q, k, v projections carry biases (required)
  bool qk_norm;   // RMSNorm of each q and k head before rope
};
constexpr ArchTraits kArchitectures[] = {
    // Llama 2/3, Mistral, TinyLlama, SmolLM: llama.cpp's converter permutes the
    // q/k projections so that rope rotates adjacent pairs.
    {"llama", RopeType::Normal, false, false},
    // Qwen2 / Qwen2.5: biases on the q, k, v projections.
    {"qwen2", RopeType::NeoX, true, false},
    // Qwen3 (dense): no biases; per-head q/k RMSNorm.
    {"qwen3", RopeType::NeoX, false, true},
};
}  // namespace

const std::vector<std::string_view>& supported_architectures() {
  static const std::vector<std::string_view> archs = [] {
    std::vector<std::string_view> names;
    for (const auto& a : kArchitectures) names.push_back(a.name);
    return names;
  }();
  return archs;
}

std::string arch_key(std::string_view arch, std::string_view suffix) { return cat(arch, ".", suffix); }

namespace {

// A dimension: present, an integer in 1..2^31 (every consumer indexes with int).
uint32_t read_dim(const gguf::File& f, const std::string& key) {
  const uint32_t v = f.get<uint32_t>(key);
  if (v == 0 || v > (1u << 31)) fail(f.path(), ": key ", gguf::quoted(key), ": ", v, " is not a valid size");
  return v;
}

std::optional<uint32_t> read_optional_dim(const gguf::File& f, const std::string& key) {
  if (!f.has(key)) return std::nullopt;
  return read_dim(f, key);
}

float read_positive_float(const gguf::File& f, const std::string& key, float fallback) {
  const auto v = f.get_optional<float>(key);
  if (!v) return fallback;
  if (!std::isfinite(*v) || *v <= 0.0f) fail(f.path(), ": key ", gguf::quoted(key), ": ", *v, " must be positive");
  return *v;
}

}  // namespace

ModelSpec ModelSpec::from_gguf(const gguf::File& f) {
  ModelSpec s;
  s.arch = std::string(f.get<std::string_view>("general.architecture"));
  const auto* traits = std::find_if(std::begin(kArchitectures), std::end(kArchitectures),
                                    [&](const ArchTraits& a) { return a.name == s.arch; });
  if (traits == std::end(kArchitectures)) {
    std::string list;
    for (auto a : supported_architectures()) list += cat(list.empty() ? "" : ", ", a);
    fail(f.path(), ": unsupported architecture ", gguf::quoted(s.arch), " (supported: ", list, ")");
  }
  auto key = [&](std::string_view suffix) { return arch_key(s.arch, suffix); };

  s.n_layers = read_dim(f, key("block_count"));
  s.n_embd = read_dim(f, key("embedding_length"));
  s.n_ff = read_dim(f, key("feed_forward_length"));
  s.n_head = read_dim(f, key("attention.head_count"));
  s.n_head_kv = read_optional_dim(f, key("attention.head_count_kv")).value_or(s.n_head);
  s.n_ctx_train = read_optional_dim(f, key("context_length")).value_or(2048);
  if (s.n_head % s.n_head_kv != 0)
    fail(f.path(), ": ", s.n_head, " attention heads cannot be shared by ", s.n_head_kv, " KV heads");

  if (auto kl = read_optional_dim(f, key("attention.key_length"))) {
    s.head_dim = *kl;
  } else {
    if (s.n_embd % s.n_head != 0)
      fail(f.path(), ": embedding length ", s.n_embd, " is not a multiple of the head count ", s.n_head);
    s.head_dim = s.n_embd / s.n_head;
  }
  s.head_dim_v = read_optional_dim(f, key("attention.value_length")).value_or(s.head_dim);
  s.rope_dim = read_optional_dim(f, key("rope.dimension_count")).value_or(s.head_dim);
  if (s.rope_dim > s.head_dim || s.rope_dim % 2 != 0)
    fail(f.path(), ": rope dimension ", s.rope_dim, " must be even and at most the head size ", s.head_dim);
  s.rope_freq_base = read_positive_float(f, key("rope.freq_base"), 10000.0f);
  s.rms_eps = read_positive_float(f, key("attention.layer_norm_rms_epsilon"), 1e-5f);
  s.rope_type = traits->rope;

  // Vocabulary size: llama.cpp takes it from the token list; the embedding must match.
  const gguf::TensorInfo& embd = f.tensor("token_embd.weight");
  if (embd.ne.size() != 2 || embd.ne[0] != s.n_embd)
    fail(f.path(), ": tensor 'token_embd.weight' must be [", s.n_embd, ", n_vocab]");
  if (const gguf::Value* tokens = f.find("tokenizer.ggml.tokens"); tokens && tokens->type() == gguf::ValueType::ARRAY)
    s.n_vocab = static_cast<uint32_t>(std::min<size_t>(tokens->size(), std::numeric_limits<uint32_t>::max()));
  else if (auto v = read_optional_dim(f, key("vocab_size")))
    s.n_vocab = *v;
  else
    s.n_vocab = static_cast<uint32_t>(std::min<uint64_t>(embd.ne[1], std::numeric_limits<uint32_t>::max()));
  if (embd.ne[1] != s.n_vocab)
    fail(f.path(), ": tensor 'token_embd.weight' has ", embd.ne[1], " rows but the vocabulary has ", s.n_vocab,
         " tokens");

  s.tied_output = f.find_tensor("output.weight") == nullptr;
  s.qkv_bias = traits->qkv_bias || f.find_tensor("blk.0.attn_q.bias") != nullptr;
  s.qk_norm = traits->qk_norm;
  return s;
}

}  // namespace rayo::models
