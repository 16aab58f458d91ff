// Tokenizer::from_gguf: reads `tokenizer.ggml.*` into a TokenizerSpec.
#include "common/error.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace rayo::tokenizer {
namespace {

std::optional<int64_t> optional_id(const gguf::File& file, std::string_view key) {
  const gguf::Value* v = file.find(key);
  if (!v) return std::nullopt;
  if (!v->is_integer()) fail(file.path(), ": key '", key, "': expected an integer, found ", v->describe());
  return v->as_int();
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const gguf::File& file) {
  TokenizerSpec spec;
  if (!file.has("tokenizer.ggml.model")) fail(file.path(), ": no tokenizer in this file (tokenizer.ggml.model is missing)");
  spec.model = std::string(file.get<std::string_view>("tokenizer.ggml.model"));
  if (auto pre = file.get_optional<std::string_view>("tokenizer.ggml.pre")) spec.pre = std::string(*pre);
  if (!file.has("tokenizer.ggml.tokens")) fail(file.path(), ": no vocabulary (tokenizer.ggml.tokens is missing)");
  for (std::string_view t : file.get_string_array("tokenizer.ggml.tokens")) spec.tokens.emplace_back(t);
  if (file.has("tokenizer.ggml.scores")) spec.scores = file.get_float_array("tokenizer.ggml.scores");
  if (file.has("tokenizer.ggml.token_type")) {
    for (int64_t v : file.get_int_array("tokenizer.ggml.token_type")) spec.token_types.push_back(static_cast<int32_t>(v));
  }
  if (spec.model == "gpt2" && !file.has("tokenizer.ggml.merges"))
    fail(file.path(), ": byte-level BPE vocabulary without merges (tokenizer.ggml.merges is missing)");
  if (file.has("tokenizer.ggml.merges")) {
    for (std::string_view m : file.get_string_array("tokenizer.ggml.merges")) spec.merges.emplace_back(m);
  }
  spec.bos_id = optional_id(file, "tokenizer.ggml.bos_token_id");
  spec.eos_id = optional_id(file, "tokenizer.ggml.eos_token_id");
  spec.eot_id = optional_id(file, "tokenizer.ggml.eot_token_id");
  spec.eom_id = optional_id(file, "tokenizer.ggml.eom_token_id");
  spec.unk_id = optional_id(file, "tokenizer.ggml.unknown_token_id");
  spec.sep_id = optional_id(file, "tokenizer.ggml.seperator_token_id");
  spec.pad_id = optional_id(file, "tokenizer.ggml.padding_token_id");
  spec.fim_pre_id = optional_id(file, "tokenizer.ggml.fim_pre_token_id");
  if (!spec.fim_pre_id) spec.fim_pre_id = optional_id(file, "tokenizer.ggml.prefix_token_id");
  spec.fim_suf_id = optional_id(file, "tokenizer.ggml.fim_suf_token_id");
  if (!spec.fim_suf_id) spec.fim_suf_id = optional_id(file, "tokenizer.ggml.suffix_token_id");
  spec.fim_mid_id = optional_id(file, "tokenizer.ggml.fim_mid_token_id");
  if (!spec.fim_mid_id) spec.fim_mid_id = optional_id(file, "tokenizer.ggml.middle_token_id");
  spec.fim_pad_id = optional_id(file, "tokenizer.ggml.fim_pad_token_id");
  spec.fim_rep_id = optional_id(file, "tokenizer.ggml.fim_rep_token_id");
  spec.fim_sep_id = optional_id(file, "tokenizer.ggml.fim_sep_token_id");
  spec.add_bos = file.get_optional<bool>("tokenizer.ggml.add_bos_token");
  spec.add_eos = file.get_optional<bool>("tokenizer.ggml.add_eos_token");
  spec.add_space_prefix = file.get_optional<bool>("tokenizer.ggml.add_space_prefix");
  if (auto tmpl = file.get_optional<std::string_view>("tokenizer.chat_template")) spec.chat_template = std::string(*tmpl);
  if (auto name = file.get_optional<std::string_view>("general.name")) spec.general_name = std::string(*name);
  try {
    return from_spec(spec);
  } catch (const Error& e) {
    fail(file.path(), ": ", e.what());
  }
}

}  // namespace rayo::tokenizer
