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
  bool gemma;     // Gemma 3's block: post-norms, GeGLU, scaled embeddings, sliding windows
};
constexpr ArchTraits kArchitectures[] = {
    // Llama 2/3, Mistral, TinyLlama, SmolLM: llama.cpp's converter permutes the
    // q/k projections so that rope rotates adjacent pairs.
    {"llama", RopeType::Normal, false, false, false},
    // Qwen2 / Qwen2.5: biases on the q, k, v projections.
    {"qwen2", RopeType::NeoX, true, false, false},
    // Qwen3 (dense): no biases; per-head q/k RMSNorm.
    {"qwen3", RopeType::NeoX, false, true, false},
    // Gemma 3 (270M ... 27B): q/k RMSNorm, norms after attention and the FFN
    // too, GELU-tanh gate, embeddings times √n_embd, sliding-window layers.
    // (llama.cpp's converter already adds Gemma's 1 to every norm weight.)
    {"gemma3", RopeType::NeoX, false, true, true},
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

// The frequency scale of linear rope scaling (llama.cpp: 1 / factor; a factor
// of 0 means none). Other kinds (yarn, longrope) are left as they were read
// before: not applied.
float read_linear_rope_scale(const gguf::File& f, const std::string& type_key, const std::string& factor_key) {
  const auto type = f.get_optional<std::string_view>(type_key);
  if (type && *type != "linear") return 1.0f;
  const auto factor = f.get_optional<float>(factor_key);
  if (!factor || *factor == 0.0f) return 1.0f;
  if (!std::isfinite(*factor) || *factor < 0.0f)
    fail(f.path(), ": key ", gguf::quoted(factor_key), ": ", *factor, " must be positive");
  return 1.0f / *factor;
}

// Gemma 3's additions, as llama.cpp reads them (src/models/gemma3.cpp).
void read_gemma3(const gguf::File& f, ModelSpec& s) {
  auto key = [&](std::string_view suffix) { return arch_key(s.arch, suffix); };
  s.post_norms = true;
  s.ffn_act = graph::Activation::GeluTanh;
  s.embedding_scale = std::sqrt(static_cast<float>(s.n_embd));
  // Gemma's query_pre_attn_scalar: n_embd / n_head for the 27B model (62
  // layers), the head size for the others.
  s.attention_scale = 1.0f / std::sqrt(static_cast<float>(s.n_layers == 62 ? s.n_embd / s.n_head : s.head_dim));
  if (auto window = f.get_optional<uint32_t>(key("attention.sliding_window")); window && *window > 0) {
    s.sliding_window = *window;
    s.sliding_window_pattern = 6;
    const std::string pattern_key = key("attention.sliding_window_pattern");
    if (const gguf::Value* p = f.find(pattern_key)) {
      if (p->type() == gguf::ValueType::ARRAY)
        fail(f.path(), ": key ", gguf::quoted(pattern_key), ": a per-layer pattern is not supported (a period is)");
      s.sliding_window_pattern = f.get<uint32_t>(pattern_key);
    }
    s.rope_freq_base_swa = read_positive_float(f, key("rope.freq_base_swa"), 10000.0f);
  }
  if (const auto cap = f.get_optional<float>(key("final_logit_softcapping")); cap && *cap != 0.0f)
    fail(f.path(), ": final logit soft-capping (", *cap, ") is not supported");
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
  s.rope_freq_scale = read_linear_rope_scale(f, key("rope.scaling.type"), key("rope.scaling.factor"));

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
  if (traits->gemma) read_gemma3(f, s);
  return s;
}

}  // namespace rayo::models
