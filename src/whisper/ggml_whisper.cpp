#include "whisper/ggml_whisper.h"

#include <array>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "audio/mel_filters.h"
#include "common/error.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "tokenizer/byte_encoding.h"
#include "whisper/ct2_int8.h"
#include "whisper/ct2_writer.h"
#include "whisper/ggml_whisper_file.h"
#include "whisper/whisper_tokenizer.h"

namespace rayo::whisper {
namespace {

constexpr std::string_view kSpecName = "WhisperSpec";
constexpr uint32_t kSpecRevision = 3;
constexpr int32_t kQuantVersion = 2;  // ggml's GGML_QNT_VERSION, which whisper.cpp's quantize writes
constexpr int32_t kFftSize = 400;     // Whisper's n_fft: 201 frequency bins per mel filter
constexpr int32_t kSampleRate = 16000;

// A CTranslate2 variable's name and the openai-whisper tensors that hold its
// rows, stacked, separated by '|'; an empty part stands for rows of zeros (the
// key projections have no bias).
struct Rename {
  std::string_view ct2, openai;
};

// Within a block: after "encoder/layer_N/" and "encoder.blocks.N." (or decoder's).
constexpr std::array<Rename, 20> kBlock{{
    {"self_attention/layer_norm/gamma", "attn_ln.weight"},
    {"self_attention/layer_norm/beta", "attn_ln.bias"},
    {"self_attention/linear_0/weight", "attn.query.weight|attn.key.weight|attn.value.weight"},
    {"self_attention/linear_0/bias", "attn.query.bias||attn.value.bias"},
    {"self_attention/linear_1/weight", "attn.out.weight"},
    {"self_attention/linear_1/bias", "attn.out.bias"},
    {"attention/layer_norm/gamma", "cross_attn_ln.weight"},
    {"attention/layer_norm/beta", "cross_attn_ln.bias"},
    {"attention/linear_0/weight", "cross_attn.query.weight"},
    {"attention/linear_0/bias", "cross_attn.query.bias"},
    {"attention/linear_1/weight", "cross_attn.key.weight|cross_attn.value.weight"},
    {"attention/linear_1/bias", "|cross_attn.value.bias"},
    {"attention/linear_2/weight", "cross_attn.out.weight"},
    {"attention/linear_2/bias", "cross_attn.out.bias"},
    {"ffn/layer_norm/gamma", "mlp_ln.weight"},
    {"ffn/layer_norm/beta", "mlp_ln.bias"},
    {"ffn/linear_0/weight", "mlp.0.weight"},
    {"ffn/linear_0/bias", "mlp.0.bias"},
    {"ffn/linear_1/weight", "mlp.2.weight"},
    {"ffn/linear_1/bias", "mlp.2.bias"},
}};

constexpr std::array<Rename, 11> kOutside{{
    {"encoder/conv1/weight", "encoder.conv1.weight"},
    {"encoder/conv1/bias", "encoder.conv1.bias"},
    {"encoder/conv2/weight", "encoder.conv2.weight"},
    {"encoder/conv2/bias", "encoder.conv2.bias"},
    {"encoder/position_encodings/encodings", "encoder.positional_embedding"},
    {"encoder/layer_norm/gamma", "encoder.ln_post.weight"},
    {"encoder/layer_norm/beta", "encoder.ln_post.bias"},
    {"decoder/embeddings/weight", "decoder.token_embedding.weight"},
    {"decoder/position_encodings/encodings", "decoder.positional_embedding"},
    {"decoder/layer_norm/gamma", "decoder.ln.weight"},
    {"decoder/layer_norm/beta", "decoder.ln.bias"},
}};

std::vector<std::string> split_parts(std::string_view prefix, std::string_view parts) {
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    const size_t bar = parts.find('|', start);
    const std::string_view part = parts.substr(start, bar == std::string_view::npos ? bar : bar - start);
    out.push_back(part.empty() ? std::string() : std::string(prefix) + std::string(part));
    if (bar == std::string_view::npos) return out;
    start = bar + 1;
  }
}

// The openai-whisper tensors of a CTranslate2 variable, in row order ("" for
// zeros); empty for the scalars, which have none.
std::vector<std::string> openai_parts(std::string_view ct2) {
  for (const auto& r : kOutside)
    if (r.ct2 == ct2) return split_parts("", r.openai);
  for (std::string_view stack : {"encoder", "decoder"}) {
    const std::string head = std::string(stack) + "/layer_";
    if (!ct2.starts_with(head)) continue;
    const size_t slash = ct2.find('/', head.size());
    if (slash == std::string_view::npos) break;
    const std::string_view layer = ct2.substr(head.size(), slash - head.size());
    const std::string_view rest = ct2.substr(slash + 1);
    for (const auto& r : kBlock)
      if (r.ct2 == rest) return split_parts(std::string(stack) + ".blocks." + std::string(layer) + ".", r.openai);
  }
  return {};
}

// The special tokens' layout for a vocabulary of n_vocab tokens, as whisper.cpp
// derives it: multilingual from 51865 tokens, and one language token per
// token past the base layout (large-v3's 51866 add <|yue|>).
WhisperVocabularyLayout layout_for(int32_t n_vocab, const std::string& path) {
  WhisperVocabularyLayout layout;
  layout.english_only = n_vocab < 51865;
  const int32_t languages = n_vocab - 51765 - (layout.english_only ? 0 : 1);
  if (languages < 99 || languages > static_cast<int32_t>(whisper_languages().size()))
    fail(path, ": a vocabulary of ", n_vocab, " tokens, which no Whisper model has (51864 to ",
         51766 + whisper_languages().size(), ")");
  layout.n_languages = static_cast<uint32_t>(languages);
  if (languages >= 100) layout.no_speech_text = "<|nospeech|>";
  RAYO_CHECK(layout.n_vocab() == static_cast<uint32_t>(n_vocab), n_vocab);
  return layout;
}

std::vector<uint64_t> squeezed(std::span<const uint64_t> shape) {
  std::vector<uint64_t> out;
  for (uint64_t d : shape)
    if (d != 1) out.push_back(d);
  return out;
}

// Whether a variable of this name and shape can keep a ggml file's blocks: a
// matrix that rayo multiplies or embeds by rows (linear weights, the token
// embedding); the convolutions (3-D), positions and vectors are read as floats.
bool keeps_blocks(const PlannedVariable& v, TensorType type) {
  const auto& block = info(type);
  return block.quantized && block.decodes && v.shape.size() == 2 && std::string_view(v.name).ends_with("/weight") &&
         v.shape[1] % block.block_size == 0;
}

// Writes a ggml tensor's values to `out` in `type`: its own bytes when it is
// already of that type (f16, or the variable's block type), else f32, exactly.
void copy_values(const GgmlTensor& t, TensorType type, const std::string& path, std::byte* out) {
  if (type == t.type) {
    std::memcpy(out, t.bytes.data(), t.bytes.size());
    return;
  }
  RAYO_CHECK(type == TensorType::F32);
  if (!quant::can_dequantize(t.type))
    fail(path, ": tensor '", t.name, "' has type ", type_name(t.type), ", which rayo cannot read");
  // The bytes of a mapped file need not be aligned for the decoder's block types.
  std::vector<uint8_t> aligned(t.bytes.begin(), t.bytes.end());
  std::vector<float> values(t.elements());
  quant::dequantize_row(t.type, aligned.data(), values.data(), static_cast<int64_t>(values.size()));
  std::memcpy(out, values.data(), 4 * values.size());
}

// One planned variable from the file, in memory of its own: f16 when every
// part is f16; the parts' block type when they all share one that the variable
// can keep (keeps_blocks), so a quantized file runs as stored; else f32.
Ct2OwnedVariable gather(const GgmlWhisperFile& file, const PlannedVariable& v) {
  const std::vector<std::string> parts = openai_parts(v.name);
  RAYO_CHECK(!parts.empty(), v.name);
  std::vector<const GgmlTensor*> tensors;
  for (const std::string& name : parts) {
    const GgmlTensor* t = nullptr;
    if (!name.empty()) {
      t = file.find(name);
      if (t == nullptr) fail(file.path(), ": no tensor '", name, "' (the model needs it for ", v.name, ")");
    }
    tensors.push_back(t);
  }
  // Each part holds an equal share of the variable's rows.
  std::vector<uint64_t> part_shape(v.shape.begin(), v.shape.end());
  part_shape[0] /= parts.size();
  uint64_t part_elements = 1;
  for (uint64_t d : part_shape) part_elements *= d;
  const std::vector<uint64_t> expected = squeezed(part_shape);
  for (const GgmlTensor* t : tensors)
    if (t != nullptr && squeezed(t->shape) != expected) {
      std::string want;
      for (uint64_t d : part_shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
      fail(file.path(), ": tensor '", t->name, "' has ", t->elements(), " values in ", t->shape.size(),
           " dimensions, not [", want, "]");
    }

  const auto same_type = [&](TensorType type, bool zeros_allowed) {
    for (const GgmlTensor* t : tensors)
      if (t == nullptr ? !zeros_allowed : t->type != type) return false;
    return true;
  };
  Ct2OwnedVariable out;
  out.name = v.name;
  out.shape = v.shape;
  const GgmlTensor* first = tensors.front() != nullptr ? tensors.front() : tensors.back();
  TensorType type = TensorType::F32;
  uint64_t part_bytes = 4 * part_elements;
  if (same_type(TensorType::F16, true)) {
    out.type = Ct2Type::F16;
    type = TensorType::F16;
    part_bytes = 2 * part_elements;
  } else if (first != nullptr && keeps_blocks(v, first->type) && same_type(first->type, false)) {
    out.type = Ct2Type::Blocks;
    out.blocks = type = first->type;
    part_bytes = row_bytes(type, v.shape[1]) * part_shape[0];
  } else {
    out.type = Ct2Type::F32;
  }
  out.bytes = AlignedBuffer(part_bytes * parts.size(), 64);  // zero-filled: +0.0 for the parts that are zeros
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i] == nullptr) continue;
    RAYO_CHECK(type == TensorType::F32 || tensors[i]->bytes.size() == part_bytes, tensors[i]->name);
    copy_values(*tensors[i], type, file.path(), out.bytes.data() + i * part_bytes);
  }
  return out;
}

WhisperPreset preset_of(const GgmlWhisperFile& file) {
  const GgmlWhisperHparams& h = file.hparams();
  const std::string& path = file.path();
  if (h.n_audio_state != h.n_text_state || h.n_audio_head != h.n_text_head)
    fail(path, ": an encoder of width ", h.n_audio_state, " and ", h.n_audio_head, " heads beside a decoder of ",
         h.n_text_state, " and ", h.n_text_head, " (Whisper models have the same in both)");
  if (h.n_mels != 80 && h.n_mels != 128) fail(path, ": ", h.n_mels, " mel bins (Whisper has 80 or 128)");
  if (h.n_audio_state % h.n_audio_head != 0)
    fail(path, ": width ", h.n_audio_state, " is not a multiple of the ", h.n_audio_head, " heads");
  WhisperPreset p;
  p.n_mels = static_cast<uint32_t>(h.n_mels);
  p.n_state = static_cast<uint32_t>(h.n_audio_state);
  p.n_head = static_cast<uint32_t>(h.n_audio_head);
  p.n_layer = static_cast<uint32_t>(h.n_audio_layer);
  p.n_audio_ctx = static_cast<uint32_t>(h.n_audio_ctx);
  p.n_text_ctx = static_cast<uint32_t>(h.n_text_ctx);
  p.vocabulary = layout_for(h.n_vocab, path);
  p.n_text_layer = static_cast<uint32_t>(h.n_text_layer);
  return p;
}

// ggml's file type (ggml_ftype) of a model whose matrices are `type`.
int32_t file_type(TensorType type) {
  switch (type) {
    case TensorType::F32: return 0;
    case TensorType::F16: return 1;
    case TensorType::Q4_0: return 2;
    case TensorType::Q4_1: return 3;
    case TensorType::Q8_0: return 7;
    case TensorType::Q5_0: return 8;
    case TensorType::Q5_1: return 9;
    default: return -1;
  }
}

// The tensors convert-pt-to-ggml.py keeps in f32 whatever the file's type.
bool stays_f32(std::string_view name, size_t rank) {
  return rank < 2 || name == "encoder.conv1.bias" || name == "encoder.conv2.bias" ||
         name == "encoder.positional_embedding" || name == "decoder.positional_embedding";
}

}  // namespace

WhisperFiles load_ggml_whisper(const std::string& path) {
  GgmlWhisperFile file = GgmlWhisperFile::open(path);
  const WhisperPreset preset = preset_of(file);
  const WhisperVocabularyLayout& layout = preset.vocabulary;

  // The vocabulary: the file's ranked tokens spelled byte-level, then the
  // special tokens. Files converted from Hugging Face's vocab.json also hold
  // <|endoftext|> (and maybe more) after the ordinary tokens: whisper.cpp
  // keeps those ids' names from the file, rayo names every special token.
  const auto ordinary = static_cast<size_t>(layout.eot());
  std::vector<std::string> vocabulary = whisper_vocabulary(layout);
  for (size_t id = 0; id < ordinary; ++id)
    vocabulary[id] = id < file.tokens().size() ? tokenizer::encode_bytes(file.tokens()[id]) : std::string();
  std::vector<std::string> merges = merges_from_ranks(vocabulary, ordinary);

  // The variables a CTranslate2 converter would write for these weights, each
  // in memory of its own (the weights once, not an image and a copy).
  const std::vector<PlannedVariable> plan = plan_whisper_variables(preset);
  std::vector<Ct2OwnedVariable> variables;
  variables.reserve(plan.size());
  for (const PlannedVariable& v : plan) {
    if (v.fill == Fill::Scalar) {
      Ct2OwnedVariable scalar{v.name, v.shape, v.type, TensorType::F32, AlignedBuffer(ct2_type_size(v.type), 64)};
      std::memcpy(scalar.bytes.data(), &v.scalar, scalar.bytes.size());  // little-endian
      variables.push_back(std::move(scalar));
    } else {
      variables.push_back(gather(file, v));
    }
  }
  Ct2Model model = Ct2Model::assemble(path, std::string(kSpecName), kSpecRevision, std::move(variables),
                                      {{"decoder/projection/weight", "decoder/embeddings/weight"}});
  WhisperSpec spec = whisper_spec(model, whisper_config_json(preset), vocabulary, path);
  return WhisperFiles{std::move(model), std::move(spec), std::move(vocabulary), std::move(merges)};
}

uint64_t write_ggml_whisper(const WhisperFiles& files, const std::string& path, TensorType type,
                            const GgmlWriteProgress& progress) {
  const int32_t ftype = file_type(type);
  if (ftype < 0)
    fail("whisper.cpp files hold f32, f16, q4_0, q4_1, q5_0, q5_1 or q8_0 weights, not ", type_name(type));
  const WhisperSpec& s = files.spec;
  GgmlWhisperHparams h;
  h.n_vocab = static_cast<int32_t>(s.n_vocab);
  h.n_audio_ctx = static_cast<int32_t>(s.n_audio_ctx);
  h.n_audio_state = static_cast<int32_t>(s.n_audio_state);
  h.n_audio_head = static_cast<int32_t>(s.n_audio_head);
  h.n_audio_layer = static_cast<int32_t>(s.n_audio_layer);
  h.n_text_ctx = static_cast<int32_t>(s.n_text_ctx);
  h.n_text_state = static_cast<int32_t>(s.n_text_state);
  h.n_text_head = static_cast<int32_t>(s.n_text_head);
  h.n_text_layer = static_cast<int32_t>(s.n_text_layer);
  h.n_mels = static_cast<int32_t>(s.n_mels);
  h.ftype = ftype + (info(type).quantized ? kGgmlQuantVersionFactor * kQuantVersion : 0);

  const audio::MelFilters filters = audio::slaney_mel_filters(h.n_mels, kFftSize, kSampleRate);
  std::vector<std::string> tokens;
  for (int32_t id = 0; id < s.eot; ++id) tokens.push_back(tokenizer::decode_bytes(files.vocabulary[id]));
  GgmlWhisperWriter writer(path, h, filters.weights, filters.n_mels, filters.n_bins, tokens);

  // Every tensor of every variable but the scalars, in the model's variable order.
  struct Part {
    const Ct2Variable* variable;
    std::string name;
    size_t index, count;
  };
  std::vector<Part> parts;
  for (const Ct2Variable& v : files.model.variables()) {
    const std::vector<std::string> names = openai_parts(v.name);
    for (size_t i = 0; i < names.size(); ++i)
      if (!names[i].empty()) parts.push_back({&v, names[i], i, names.size()});
  }
  uint64_t total = 0, done = 0;
  for (const Part& p : parts) total += p.variable->bytes.size() / p.count;
  std::vector<float> values;
  std::vector<uint8_t> aligned, out;
  for (size_t n = 0; n < parts.size(); ++n) {
    const Part& p = parts[n];
    const Ct2Variable& v = *p.variable;
    std::vector<uint64_t> shape(v.shape.begin(), v.shape.end());
    shape[0] /= p.count;
    if (p.name == "encoder.conv1.bias" || p.name == "encoder.conv2.bias") shape.push_back(1);  // [n, 1], as whisper.cpp has them
    TensorType written = type;
    if (stays_f32(p.name, v.shape.size())) written = TensorType::F32;
    else if (info(type).quantized && (shape.size() != 2 || shape[1] % info(type).block_size != 0)) written = TensorType::F16;
    const uint64_t part_elements = v.elements() / p.count;

    if (const Ct2Variable* scale = ct2_int8_scale(files.model, v)) {  // a CTranslate2 int8 model's matrix
      values.resize(part_elements);
      const auto part_rows = static_cast<int64_t>(shape[0]);
      ct2_int8_to_f32(v, *scale, static_cast<int64_t>(p.index) * part_rows, part_rows, values.data());
      out.resize(row_bytes(written, part_elements));
      quant::quantize_row(written, values.data(), out.data(), static_cast<int64_t>(part_elements));
    } else {
      TensorType source;
      switch (v.type) {
        case Ct2Type::F32: source = TensorType::F32; break;
        case Ct2Type::F16: source = TensorType::F16; break;
        case Ct2Type::BF16: source = TensorType::BF16; break;
        case Ct2Type::Blocks: source = v.blocks; break;  // a quantized whisper.cpp file, written again
        default:
          fail(files.model.path(), ": variable '", v.name, "' is ", ct2_type_name(v.type), ", not a float tensor");
      }
      const uint64_t part_bytes = v.bytes.size() / p.count;  // rows split evenly, whole blocks each
      aligned.assign(v.bytes.begin() + static_cast<std::ptrdiff_t>(p.index * part_bytes),
                     v.bytes.begin() + static_cast<std::ptrdiff_t>((p.index + 1) * part_bytes));
      if (written == source) {
        out = aligned;  // already in the asked type: the same bytes, not quantized twice
      } else {
        values.resize(part_elements);
        quant::dequantize_row(source, aligned.data(), values.data(), static_cast<int64_t>(part_elements));
        out.resize(row_bytes(written, part_elements));
        quant::quantize_row(written, values.data(), out.data(), static_cast<int64_t>(part_elements));
      }
    }
    writer.add(p.name, shape, written, out);
    done += v.bytes.size() / p.count;
    if (progress) progress(done, total);
  }
  return writer.finish();
}

}  // namespace rayo::whisper
