#include "tools/synth_model.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_set>

#include "common/error.h"
#include "common/half.h"
#include "quant/blocks.h"
#include "quant/k_scales.h"
#include "tokenizer/chat_template.h"

namespace rayo::tools {

// ---------------------------------------------------------------- presets

namespace {

struct Preset {
  std::string_view name;
  SynthConfig config;
};

SynthConfig make(std::string arch, std::string name, uint32_t layers, uint32_t embd, uint32_t ff, uint32_t heads,
                 uint32_t kv_heads, uint32_t head_dim, uint32_t vocab, uint32_t ctx, float rope_base, float eps,
                 bool tied) {
  SynthConfig c;
  c.arch = std::move(arch);
  c.name = std::move(name);
  c.n_layers = layers;
  c.n_embd = embd;
  c.n_ff = ff;
  c.n_head = heads;
  c.n_head_kv = kv_heads;
  c.head_dim = head_dim;
  c.n_vocab = vocab;
  c.n_ctx = ctx;
  c.rope_freq_base = rope_base;
  c.rms_eps = eps;
  c.tied_output = tied;
  c.qkv_bias = c.arch == "qwen2";
  c.qk_norm = c.arch == "qwen3" || c.arch == "gemma3";
  return c;
}

// Gemma 3's sizes: head size 256 (128 for 27B), one KV head per 2-4 query
// heads, a 512-position window (1 024 from 4B up) on five layers in six, linear
// rope scaling 8 from 4B up, a 262k vocabulary (262 208 with the vision
// models' tokens), tied output.
SynthConfig gemma3(std::string name, uint32_t layers, uint32_t embd, uint32_t ff, uint32_t heads, uint32_t kv_heads,
                   uint32_t head_dim, uint32_t vocab, uint32_t ctx, uint32_t window, float scaling) {
  SynthConfig c = make("gemma3", std::move(name), layers, embd, ff, heads, kv_heads, head_dim, vocab, ctx, 1e6f, 1e-6f,
                       true);
  c.sliding_window = window;
  c.rope_scaling_factor = scaling;
  return c;
}

// Hyperparameters of the published models (their config.json / llama.cpp GGUFs).
const std::vector<Preset>& presets() {
  static const std::vector<Preset> list = {
      {"tinyllama-1.1b", make("llama", "TinyLlama 1.1B (synthetic)", 22, 2048, 5632, 32, 4, 0, 32000, 2048, 10000.0f, 1e-5f, false)},
      {"llama3-8b", make("llama", "Llama 3 8B (synthetic)", 32, 4096, 14336, 32, 8, 0, 128256, 8192, 500000.0f, 1e-5f, false)},
      {"qwen2.5-0.5b", make("qwen2", "Qwen2.5 0.5B (synthetic)", 24, 896, 4864, 14, 2, 0, 151936, 32768, 1e6f, 1e-6f, true)},
      {"qwen2.5-1.5b", make("qwen2", "Qwen2.5 1.5B (synthetic)", 28, 1536, 8960, 12, 2, 0, 151936, 32768, 1e6f, 1e-6f, true)},
      {"qwen2.5-7b", make("qwen2", "Qwen2.5 7B (synthetic)", 28, 3584, 18944, 28, 4, 0, 152064, 32768, 1e6f, 1e-6f, false)},
      {"qwen3-0.6b", make("qwen3", "Qwen3 0.6B (synthetic)", 28, 1024, 3072, 16, 8, 128, 151936, 40960, 1e6f, 1e-6f, true)},
      {"gemma3-270m", gemma3("Gemma 3 270M (synthetic)", 18, 640, 2048, 4, 1, 256, 262144, 32768, 512, 0.0f)},
      {"gemma3-1b", gemma3("Gemma 3 1B (synthetic)", 26, 1152, 6912, 4, 1, 256, 262144, 32768, 512, 0.0f)},
      {"gemma3-4b", gemma3("Gemma 3 4B (synthetic)", 34, 2560, 10240, 8, 4, 256, 262208, 131072, 1024, 8.0f)},
      {"gemma3-12b", gemma3("Gemma 3 12B (synthetic)", 48, 3840, 15360, 16, 8, 256, 262208, 131072, 1024, 8.0f)},
      {"gemma3-27b", gemma3("Gemma 3 27B (synthetic)", 62, 5376, 21504, 32, 16, 128, 262208, 131072, 1024, 8.0f)},
  };
  return list;
}

const std::vector<std::string_view> kArchs = {"llama", "qwen2", "qwen3", "gemma3"};

std::string join(const std::vector<std::string_view>& items) {
  std::string out;
  for (auto s : items) out += cat(out.empty() ? "" : ", ", s);
  return out;
}

}  // namespace

const std::vector<std::string_view>& synth_preset_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> n = {"tiny"};
    for (const auto& p : presets()) n.push_back(p.name);
    return n;
  }();
  return names;
}

SynthConfig synth_preset(std::string_view preset, std::optional<std::string_view> arch) {
  if (arch && std::find(kArchs.begin(), kArchs.end(), *arch) == kArchs.end())
    fail("unknown architecture ", gguf::quoted(*arch), " (choose from: ", join(kArchs), ")");
  if (preset == "tiny") {
    // Small enough for unit tests, rows a whole number of k-quant blocks.
    const std::string a(arch.value_or("llama"));
    if (a == "gemma3") return gemma3("tiny gemma3 (synthetic)", 6, 256, 768, 4, 2, 64, 512, 2048, 16, 0.0f);
    return make(a, "tiny " + a + " (synthetic)", 2, 256, 768, 4, 2, 0, 512, 2048, a == "llama" ? 10000.0f : 1e6f,
                a == "llama" ? 1e-5f : 1e-6f, a == "qwen2");
  }
  for (const auto& p : presets()) {
    if (p.name != preset) continue;
    if (arch && *arch != p.config.arch)
      fail("preset ", gguf::quoted(preset), " is a ", p.config.arch, " model, not ", *arch);
    return p.config;
  }
  fail("unknown preset ", gguf::quoted(preset), " (choose from: ", join(synth_preset_names()), ")");
}

// ---------------------------------------------------------------- file types and the mix

namespace {

struct FileTypeInfo {
  SynthFileType type;
  std::string_view name;
  uint32_t llama_ftype;
  TensorType base;
};

constexpr std::array kFileTypes = {
    FileTypeInfo{SynthFileType::F32, "f32", 0, TensorType::F32},
    FileTypeInfo{SynthFileType::F16, "f16", 1, TensorType::F16},
    FileTypeInfo{SynthFileType::BF16, "bf16", 32, TensorType::BF16},
    FileTypeInfo{SynthFileType::Q8_0, "q8_0", 7, TensorType::Q8_0},
    FileTypeInfo{SynthFileType::Q4_0, "q4_0", 2, TensorType::Q4_0},
    FileTypeInfo{SynthFileType::Q4_1, "q4_1", 3, TensorType::Q4_1},
    FileTypeInfo{SynthFileType::Q5_0, "q5_0", 8, TensorType::Q5_0},
    FileTypeInfo{SynthFileType::Q5_1, "q5_1", 9, TensorType::Q5_1},
    FileTypeInfo{SynthFileType::Q2_K, "q2_k", 10, TensorType::Q2_K},
    FileTypeInfo{SynthFileType::Q3_K_M, "q3_k_m", 12, TensorType::Q3_K},
    FileTypeInfo{SynthFileType::Q4_K_S, "q4_k_s", 14, TensorType::Q4_K},
    FileTypeInfo{SynthFileType::Q4_K_M, "q4_k_m", 15, TensorType::Q4_K},
    FileTypeInfo{SynthFileType::Q5_K_S, "q5_k_s", 16, TensorType::Q5_K},
    FileTypeInfo{SynthFileType::Q5_K_M, "q5_k_m", 17, TensorType::Q5_K},
    FileTypeInfo{SynthFileType::Q6_K, "q6_k", 18, TensorType::Q6_K},
    FileTypeInfo{SynthFileType::IQ4_NL, "iq4_nl", 25, TensorType::IQ4_NL},
    FileTypeInfo{SynthFileType::IQ4_XS, "iq4_xs", 30, TensorType::IQ4_XS},
};

const FileTypeInfo& file_type_info(SynthFileType t) {
  for (const auto& i : kFileTypes)
    if (i.type == t) return i;
  fail("unknown synthetic file type");
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// llama.cpp's replacement when a row is not a whole number of 256-value blocks.
TensorType k_quant_fallback(TensorType t) {
  switch (t) {
    case TensorType::Q2_K:
    case TensorType::Q3_K: return TensorType::Q4_0;
    case TensorType::IQ4_XS: return TensorType::IQ4_NL;
    case TensorType::Q4_K: return TensorType::Q5_0;
    case TensorType::Q5_K: return TensorType::Q5_1;
    case TensorType::Q6_K: return TensorType::Q8_0;
    default: return t;
  }
}

}  // namespace

SynthFileType parse_synth_file_type(std::string_view name) {
  std::string lower(name);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& i : kFileTypes)
    if (i.name == lower) return i.type;
  std::vector<std::string_view> names;
  for (const auto& i : kFileTypes) names.push_back(i.name);
  fail("unknown type ", gguf::quoted(name), " (choose from: ", join(names), ")");
}

std::string_view synth_file_type_name(SynthFileType t) { return file_type_info(t).name; }
uint32_t llama_ftype_id(SynthFileType t) { return file_type_info(t).llama_ftype; }

bool use_more_bits(uint32_t layer, uint32_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

TensorType synth_tensor_type(SynthFileType ftype, std::string_view name, uint32_t layer, uint32_t n_layers,
                             uint64_t row_length, bool has_output, uint32_t n_gqa) {
  using F = SynthFileType;
  if (ends_with(name, "norm.weight") || ends_with(name, ".bias")) return TensorType::F32;
  const FileTypeInfo& f = file_type_info(ftype);
  TensorType type = f.base;
  if (!info(type).quantized) return type;  // float files keep every matrix in their type

  const bool is_output = name == "output.weight" || (!has_output && name == "token_embd.weight");
  if (is_output) {
    if (row_length % quant::QK_K != 0) return TensorType::Q8_0;
    if (type != TensorType::Q8_0) return TensorType::Q6_K;
    return type;
  }
  const bool iq4 = ftype == F::IQ4_NL || ftype == F::IQ4_XS;
  if (contains(name, "attn_v.weight")) {
    if (ftype == F::Q2_K) type = n_gqa >= 4 ? TensorType::Q4_K : TensorType::Q3_K;
    else if (ftype == F::Q3_K_M) type = layer < 2 ? TensorType::Q5_K : TensorType::Q4_K;
    else if (iq4 && n_gqa >= 4) type = TensorType::Q5_K;
    else if ((ftype == F::Q4_K_M || ftype == F::Q5_K_M) && use_more_bits(layer, n_layers)) type = TensorType::Q6_K;
    else if (ftype == F::Q4_K_S && layer < 4) type = TensorType::Q5_K;
  } else if (contains(name, "ffn_down")) {
    if (ftype == F::Q2_K) type = TensorType::Q3_K;
    else if (ftype == F::Q3_K_M) type = layer < n_layers / 16 ? TensorType::Q5_K : TensorType::Q4_K;
    else if ((ftype == F::Q4_K_M || ftype == F::Q5_K_M) && use_more_bits(layer, n_layers)) type = TensorType::Q6_K;
    else if ((iq4 || ftype == F::Q4_K_S) && layer < n_layers / 8) type = TensorType::Q5_K;
  } else if (contains(name, "attn_output")) {
    if (ftype == F::Q2_K) type = TensorType::Q3_K;
    else if (ftype == F::Q3_K_M) type = TensorType::Q4_K;
  }
  if (row_length % info(type).block_size != 0) type = k_quant_fallback(type);
  return type;
}

// ---------------------------------------------------------------- tokenizer

namespace {

// llama.cpp's token types.
constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6;

struct SynthVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  uint32_t bos = 1, eos = 2, unk = 0;
  std::optional<uint32_t> im_start, im_end;
  std::optional<uint32_t> start_of_turn;  // gemma3
};

const char* const kWords[] = {
    "the", "of", "and", "to", "a", "in", "is", "it", "that", "was", "he", "for", "on", "are", "as", "with",
    "his", "they", "I", "at", "be", "this", "have", "from", "or", "one", "had", "by", "word", "but", "not",
    "what", "all", "were", "we", "when", "your", "can", "said", "there", "use", "an", "each", "which", "she",
    "do", "how", "their", "if", "will", "up", "other", "about", "out", "many", "then", "them", "these", "so",
    "some", "her", "would", "make", "like", "him", "into", "time", "has", "look", "two", "more", "write", "go",
    "see", "number", "no", "way", "could", "people", "my", "than", "first", "water", "been", "call", "who",
    "oil", "its", "now", "find", "long", "down", "day", "did", "get", "come", "made", "may", "part", "once",
    "upon", "little", "girl", "boy", "named", "Lily", "Tom", "happy", "play", "dog", "cat", "sun", "tree",
    "house", "friend", "big", "small", "saw", "went", "very", "good", "new", "old", "world", "hello", "model",
    "language", "computer", "data", "science", "year", "years", "know", "think", "because", "just", "also",
};

// Deterministic pronounceable fillers: "ba", "be", ..., "bab", ... in order.
std::string syllables(uint64_t k) {
  static constexpr std::string_view consonants = "bcdfghjklmnprstvwz";
  static constexpr std::string_view vowels = "aeiou";
  std::string s;
  do {
    s += consonants[k % consonants.size()];
    k /= consonants.size();
    s += vowels[k % vowels.size()];
    k /= vowels.size();
  } while (k > 0);
  return s;
}

SynthVocab make_vocab(const SynthConfig& c) {
  SynthVocab v;
  auto add = [&](std::string text, int32_t type) {
    v.tokens.push_back(std::move(text));
    v.types.push_back(type);
    v.scores.push_back(type == kNormal ? -static_cast<float>(v.tokens.size()) : 0.0f);
  };
  if (c.arch == "gemma3") {
    // Gemma's specials: <pad> 0, <eos> 1, <bos> 2, <unk> 3, then its turn markers.
    add("<pad>", kControl);
    add("<eos>", kControl);
    add("<bos>", kControl);
    add("<unk>", kUnknown);
    v.eos = 1, v.bos = 2, v.unk = 3;
    v.start_of_turn = static_cast<uint32_t>(v.tokens.size());
    add("<start_of_turn>", kControl);
    add("<end_of_turn>", kControl);  // end of generation by its text (llama.cpp does the same)
  } else {
    add("<unk>", kUnknown);
    add("<s>", kControl);
    add("</s>", kControl);
  }
  const bool chatml = c.arch != "llama" && c.arch != "gemma3";
  if (chatml) {
    v.im_start = static_cast<uint32_t>(v.tokens.size());
    add("<|im_start|>", kControl);
    v.im_end = static_cast<uint32_t>(v.tokens.size());
    add("<|im_end|>", kControl);
    v.eos = *v.im_end;  // chat models stop at the end of their turn
  }
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) add(cat("<0x", hex[b >> 4], hex[b & 15], ">"), kByte);

  std::unordered_set<std::string> seen(v.tokens.begin(), v.tokens.end());
  auto add_piece = [&](std::string piece) {
    if (v.tokens.size() >= c.n_vocab || !seen.insert(piece).second) return;
    add(std::move(piece), kNormal);
  };
  const std::string space = "\xe2\x96\x81";  // U+2581, SentencePiece's word boundary
  add_piece(space);
  for (char ch = 'a'; ch <= 'z'; ++ch) add_piece(std::string(1, ch));
  for (const char* w : kWords) add_piece(space + w);
  for (char ch = 0x21; ch < 0x7f; ++ch) add_piece(std::string(1, ch));
  for (char ch = 'a'; ch <= 'z'; ++ch) add_piece(space + ch);
  for (const char* w : kWords) add_piece(w);
  for (uint64_t k = 0; v.tokens.size() < c.n_vocab; ++k) {
    add_piece(space + syllables(k));
    add_piece(syllables(k));
  }
  return v;
}

uint32_t min_vocab(const SynthConfig& c) { return (c.arch == "llama" ? 3 : c.arch == "gemma3" ? 6 : 5) + 256 + 1; }

constexpr std::string_view kChatMlTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";


}  // namespace

// ---------------------------------------------------------------- model layout

void validate_synth_config(const SynthConfig& c, SynthFileType ftype) {
  if (std::find(kArchs.begin(), kArchs.end(), c.arch) == kArchs.end())
    fail("unknown architecture ", gguf::quoted(c.arch), " (choose from: ", join(kArchs), ")");
  if (c.n_layers == 0 || c.n_embd == 0 || c.n_ff == 0 || c.n_head == 0 || c.n_head_kv == 0 || c.n_ctx == 0)
    fail("layers, dim, ffn, heads, kv heads and context must all be positive");
  if (c.n_head % c.n_head_kv != 0) fail(c.n_head, " heads cannot be shared by ", c.n_head_kv, " KV heads");
  if (c.head_dim == 0 && c.n_embd % c.n_head != 0) fail("dim ", c.n_embd, " is not a multiple of the head count ", c.n_head);
  if (c.effective_head_dim() % 2 != 0) fail("head size ", c.effective_head_dim(), " must be even (rotary embeddings)");
  if (c.n_vocab < min_vocab(c)) fail("vocabulary of ", c.n_vocab, " tokens is too small (at least ", min_vocab(c), ")");
  if (info(file_type_info(ftype).base).quantized) {
    const uint64_t rows[] = {c.n_embd, c.n_ff, uint64_t{c.n_head} * c.effective_head_dim()};
    for (uint64_t r : rows)
      if (r % 32 != 0)
        fail("row length ", r, " is not a multiple of 32, which ", synth_file_type_name(ftype), " needs");
  }
}

gguf::Writer synth_writer(const SynthConfig& c, SynthFileType ftype) {
  validate_synth_config(c, ftype);
  const std::string& a = c.arch;
  const uint32_t hd = c.effective_head_dim();
  gguf::Writer w;
  w.add_string("general.architecture", a);
  w.add_string("general.name", c.name);
  w.add_u32(a + ".context_length", c.n_ctx);
  w.add_u32(a + ".embedding_length", c.n_embd);
  w.add_u32(a + ".block_count", c.n_layers);
  w.add_u32(a + ".feed_forward_length", c.n_ff);
  w.add_u32(a + ".attention.head_count", c.n_head);
  w.add_u32(a + ".attention.head_count_kv", c.n_head_kv);
  w.add_f32(a + ".rope.freq_base", c.rope_freq_base);
  w.add_f32(a + ".attention.layer_norm_rms_epsilon", c.rms_eps);
  if (a == "llama") w.add_u32(a + ".rope.dimension_count", hd);
  if (c.sliding_window) w.add_u32(a + ".attention.sliding_window", c.sliding_window);
  if (c.rope_freq_base_swa > 0) w.add_f32(a + ".rope.freq_base_swa", c.rope_freq_base_swa);
  if (c.rope_scaling_factor > 0) {
    w.add_string(a + ".rope.scaling.type", "linear");
    w.add_f32(a + ".rope.scaling.factor", c.rope_scaling_factor);
  }
  if (c.head_dim) {
    w.add_u32(a + ".attention.key_length", hd);
    w.add_u32(a + ".attention.value_length", hd);
  }
  w.add_u32("general.file_type", llama_ftype_id(ftype));
  if (info(file_type_info(ftype).base).quantized) w.add_u32("general.quantization_version", 2);

  SynthVocab v = make_vocab(c);
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string("tokenizer.ggml.pre", "default");
  w.add_string_array("tokenizer.ggml.tokens", v.tokens);
  w.add_f32_array("tokenizer.ggml.scores", v.scores);
  w.add_i32_array("tokenizer.ggml.token_type", v.types);
  w.add_u32("tokenizer.ggml.bos_token_id", v.bos);
  w.add_u32("tokenizer.ggml.eos_token_id", v.eos);
  w.add_u32("tokenizer.ggml.unknown_token_id", v.unk);
  w.add_bool("tokenizer.ggml.add_bos_token", a == "llama" || a == "gemma3");
  w.add_bool("tokenizer.ggml.add_eos_token", false);
  // llama.cpp's converter writes this for Gemma 3's SentencePiece vocabulary.
  if (a == "gemma3") w.add_bool("tokenizer.ggml.add_space_prefix", false);
  if (v.im_end) w.add_string("tokenizer.chat_template", kChatMlTemplate);
  if (v.start_of_turn) w.add_string("tokenizer.chat_template", tokenizer::default_chat_template("gemma3").source);

  const bool has_output = !c.tied_output;
  auto tensor = [&](const std::string& name, std::vector<uint64_t> ne, uint32_t layer) {
    const TensorType type = synth_tensor_type(ftype, name, layer, c.n_layers, ne[0], has_output, c.n_head / c.n_head_kv);
    w.add_tensor(name, type, std::move(ne));
  };
  const uint64_t q_dim = uint64_t{c.n_head} * hd, kv_dim = uint64_t{c.n_head_kv} * hd;
  tensor("token_embd.weight", {c.n_embd, c.n_vocab}, 0);
  for (uint32_t i = 0; i < c.n_layers; ++i) {
    const std::string p = cat("blk.", i, ".");
    tensor(p + "attn_norm.weight", {c.n_embd}, i);
    tensor(p + "attn_q.weight", {c.n_embd, q_dim}, i);
    tensor(p + "attn_k.weight", {c.n_embd, kv_dim}, i);
    tensor(p + "attn_v.weight", {c.n_embd, kv_dim}, i);
    if (c.qkv_bias) {
      tensor(p + "attn_q.bias", {q_dim}, i);
      tensor(p + "attn_k.bias", {kv_dim}, i);
      tensor(p + "attn_v.bias", {kv_dim}, i);
    }
    if (c.qk_norm) {
      tensor(p + "attn_q_norm.weight", {hd}, i);
      tensor(p + "attn_k_norm.weight", {hd}, i);
    }
    tensor(p + "attn_output.weight", {q_dim, c.n_embd}, i);
    if (a == "gemma3") tensor(p + "post_attention_norm.weight", {c.n_embd}, i);
    tensor(p + "ffn_norm.weight", {c.n_embd}, i);
    tensor(p + "ffn_gate.weight", {c.n_embd, c.n_ff}, i);
    tensor(p + "ffn_up.weight", {c.n_embd, c.n_ff}, i);
    tensor(p + "ffn_down.weight", {c.n_ff, c.n_embd}, i);
    if (a == "gemma3") tensor(p + "post_ffw_norm.weight", {c.n_embd}, i);
  }
  tensor("output_norm.weight", {c.n_embd}, c.n_layers);
  if (has_output) tensor("output.weight", {c.n_embd, c.n_vocab}, c.n_layers);
  return w;
}

// ---------------------------------------------------------------- weights

namespace {

// splitmix64: tiny, fast, and good enough to look like weights.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1)
  float symmetric() { return 2.0f * uniform() - 1.0f; }                                // [-1, 1)
  void fill(uint8_t* p, size_t n) {
    while (n >= 8) {
      const uint64_t r = next();
      std::memcpy(p, &r, 8);
      p += 8;
      n -= 8;
    }
    if (n) {
      const uint64_t r = next();
      std::memcpy(p, &r, n);
    }
  }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }

 private:
  uint64_t state_;
};

// The weights' spread: a uniform distribution with standard deviation ~0.02.
constexpr float kWeightStd = 0.02f;
constexpr float kUniformHalfWidth = kWeightStd * 1.7320508f;

enum class Role { Matrix, Norm, Bias };

Role role_of(std::string_view name) {
  if (ends_with(name, "norm.weight")) return Role::Norm;
  if (ends_with(name, ".bias")) return Role::Bias;
  return Role::Matrix;
}

float element_value(Role role, Rng& rng) {
  switch (role) {
    case Role::Norm: return 1.0f + 0.05f * rng.symmetric();
    case Role::Bias: return kWeightStd * rng.symmetric();
    default: return kUniformHalfWidth * rng.symmetric();
  }
}

uint16_t half_of(float f) { return fp32_to_fp16(f); }

// A block scale near `base`, varied so that blocks differ.
float jitter(float base, Rng& rng) { return base * (0.75f + 0.5f * rng.uniform()); }

// One block of a quantized type, values spread ~kWeightStd around zero. Each
// scale is sized from the spread of the block's integer codes: uniform q in
// [0, 2^b) has standard deviation ~2^b / 3.46.
void fill_block(TensorType type, uint8_t* p, Rng& rng) {
  using namespace quant;
  switch (type) {
    case TensorType::Q8_0: {
      auto* b = reinterpret_cast<BlockQ8_0*>(p);
      rng.fill(reinterpret_cast<uint8_t*>(b->qs), sizeof b->qs);
      b->d = half_of(jitter(kWeightStd / 73.9f, rng));
      return;
    }
    case TensorType::Q4_0: {
      auto* b = reinterpret_cast<BlockQ4_0*>(p);
      rng.fill(b->qs, sizeof b->qs);
      b->d = half_of(jitter(kWeightStd / 4.6f, rng));
      return;
    }
    case TensorType::Q4_1: {
      auto* b = reinterpret_cast<BlockQ4_1*>(p);
      rng.fill(b->qs, sizeof b->qs);
      const float d = jitter(kWeightStd / 4.6f, rng);
      b->d = half_of(d);
      b->m = half_of(-7.5f * d);  // value = d*q + m, centred on q = 7.5
      return;
    }
    case TensorType::IQ4_NL: {
      auto* b = reinterpret_cast<BlockIQ4_NL*>(p);
      rng.fill(b->qs, sizeof b->qs);
      b->d = half_of(jitter(kWeightStd / 67.0f, rng));  // the 16 levels have a spread of ~67
      return;
    }
    case TensorType::IQ4_XS: {
      // value = d * (scale - 32) * level; scales 36..44 (8 +- 4 after the bias).
      auto* b = reinterpret_cast<BlockIQ4_XS*>(p);
      rng.fill(b->qs, sizeof b->qs);
      b->scales_h = 0;
      for (int j = 0; j < 8; ++j) {
        const auto ls = static_cast<uint32_t>(36 + rng.below(9));
        if (j % 2 == 0) b->scales_l[j / 2] = 0;
        b->scales_l[j / 2] = static_cast<uint8_t>(b->scales_l[j / 2] | (ls & 0xf) << (4 * (j % 2)));
        b->scales_h = static_cast<uint16_t>(b->scales_h | (ls >> 4) << (2 * j));
      }
      b->d = half_of(jitter(kWeightStd / (67.0f * 8.0f), rng));
      return;
    }
    case TensorType::Q2_K: {
      // value = d*scale*q - dmin*min, q in 0..3; min = scale and dmin = 1.5 d centre every sub-block.
      auto* b = reinterpret_cast<BlockQ2_K*>(p);
      rng.fill(b->qs, sizeof b->qs);
      for (auto& sc : b->scales) {
        const auto s4 = static_cast<uint8_t>(8 + rng.below(8));  // 8..15
        sc = static_cast<uint8_t>(s4 | s4 << 4);
      }
      const float d = jitter(kWeightStd / (1.12f * 11.5f), rng);
      b->d = half_of(d);
      b->dmin = half_of(1.5f * d);
      return;
    }
    case TensorType::Q3_K: {
      // value = d*scale*q, q in -4..3 (spread ~2.3, mean -0.5); scales of 8..15 with
      // random signs, so that the sub-blocks' means cancel.
      auto* b = reinterpret_cast<BlockQ3_K*>(p);
      rng.fill(b->hmask, sizeof b->hmask);
      rng.fill(b->qs, sizeof b->qs);
      uint8_t biased[16];
      for (auto& sc : biased) {
        const int magnitude = 8 + static_cast<int>(rng.below(8));
        sc = static_cast<uint8_t>(32 + (rng.below(2) ? magnitude : -magnitude));
      }
      pack_q3_k_scales(biased, b->scales);
      b->d = half_of(jitter(kWeightStd / (2.3f * 11.5f), rng));
      return;
    }
    case TensorType::Q5_0: {
      auto* b = reinterpret_cast<BlockQ5_0*>(p);
      rng.fill(b->qh, sizeof b->qh);
      rng.fill(b->qs, sizeof b->qs);
      b->d = half_of(jitter(kWeightStd / 9.2f, rng));
      return;
    }
    case TensorType::Q5_1: {
      auto* b = reinterpret_cast<BlockQ5_1*>(p);
      rng.fill(b->qh, sizeof b->qh);
      rng.fill(b->qs, sizeof b->qs);
      const float d = jitter(kWeightStd / 9.2f, rng);
      b->d = half_of(d);
      b->m = half_of(-15.5f * d);  // value = d*q + m, centred on q = 15.5
      return;
    }
    case TensorType::Q4_K:
    case TensorType::Q5_K: {
      // value = d*scale*q - dmin*min; with min == scale and dmin = d * (centre of q)
      // every sub-block is centred on zero.
      const bool five = type == TensorType::Q5_K;
      uint8_t* scales;
      uint16_t *d, *dmin;
      if (five) {
        auto* b = reinterpret_cast<BlockQ5_K*>(p);
        rng.fill(b->qh, sizeof b->qh);
        rng.fill(b->qs, sizeof b->qs);
        scales = b->scales, d = &b->d, dmin = &b->dmin;
      } else {
        auto* b = reinterpret_cast<BlockQ4_K*>(p);
        rng.fill(b->qs, sizeof b->qs);
        scales = b->scales, d = &b->d, dmin = &b->dmin;
      }
      std::memset(scales, 0, K_SCALE_SIZE);
      for (int j = 0; j < 8; ++j) {
        const auto s = static_cast<uint8_t>(16 + rng.below(32));  // 16..47, mean ~32
        set_scale_min_k4(j, s, s, scales);
      }
      const float q_std = five ? 9.2f : 4.6f, q_centre = five ? 15.5f : 7.5f;
      const float dv = jitter(kWeightStd / (q_std * 32.0f), rng);
      *d = half_of(dv);
      *dmin = half_of(dv * q_centre);
      return;
    }
    case TensorType::Q6_K: {
      auto* b = reinterpret_cast<BlockQ6_K*>(p);
      rng.fill(b->ql, sizeof b->ql);
      rng.fill(b->qh, sizeof b->qh);
      for (auto& s : b->scales) s = static_cast<int8_t>(4 + rng.below(9));  // 4..12, mean 8
      b->d = half_of(jitter(kWeightStd / (18.5f * 8.0f), rng));
      return;
    }
    default: fail("synthetic weights: no generator for type ", type_name(type));
  }
}

}  // namespace

void synth_tensor_data(const gguf::WriterTensor& t, size_t index, uint64_t seed, gguf::TensorSink& out) {
  // Each tensor has its own stream, so tensors could be produced in any order.
  Rng rng(seed * 0x100000001b3ull + index * 0x9e3779b97f4a7c15ull + 1);
  const auto& ti = info(t.type);
  const Role role = role_of(t.name);
  constexpr size_t kChunkBytes = size_t{1} << 20;
  const size_t per_chunk = std::max<size_t>(1, kChunkBytes / ti.block_bytes);
  std::vector<uint8_t> buffer(per_chunk * ti.block_bytes);
  const uint64_t n_blocks = t.n_bytes / ti.block_bytes;
  for (uint64_t done = 0; done < n_blocks;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(per_chunk, n_blocks - done));
    uint8_t* p = buffer.data();
    for (size_t i = 0; i < n; ++i, p += ti.block_bytes) {
      switch (t.type) {
        case TensorType::F32: {
          const float v = element_value(role, rng);
          std::memcpy(p, &v, 4);
          break;
        }
        case TensorType::F16: {
          const uint16_t h = fp32_to_fp16(element_value(role, rng));
          std::memcpy(p, &h, 2);
          break;
        }
        case TensorType::BF16: {
          const uint16_t h = fp32_to_bf16(element_value(role, rng));
          std::memcpy(p, &h, 2);
          break;
        }
        default: fill_block(t.type, p, rng);
      }
    }
    out.write({buffer.data(), n * ti.block_bytes});
    done += n;
  }
}

void write_synth_model(const SynthConfig& config, SynthFileType ftype, uint64_t seed, const std::string& path,
                       const gguf::WriteProgress& progress) {
  const gguf::Writer w = synth_writer(config, ftype);
  w.write_file(
      path, [&](size_t i, const gguf::WriterTensor& t, gguf::TensorSink& out) { synth_tensor_data(t, i, seed, out); },
      progress);
}

std::vector<uint8_t> synth_model_bytes(const SynthConfig& config, SynthFileType ftype, uint64_t seed) {
  const gguf::Writer w = synth_writer(config, ftype);
  return w.write_bytes(
      [&](size_t i, const gguf::WriterTensor& t, gguf::TensorSink& out) { synth_tensor_data(t, i, seed, out); });
}

}  // namespace rayo::tools
