#include "gguf/summary.h"

#include <algorithm>
#include <map>

namespace rayo::gguf {

std::vector<TypeUsage> type_usage(const File& file) {
  std::map<uint32_t, TypeUsage> by_type;
  for (const auto& t : file.tensors()) {
    TypeUsage& u = by_type[static_cast<uint32_t>(t.type)];
    u.type = t.type;
    ++u.tensors;
    u.bytes += t.n_bytes;
    u.elements += t.n_elements;
  }
  std::vector<TypeUsage> out;
  for (const auto& [id, u] : by_type) out.push_back(u);
  std::stable_sort(out.begin(), out.end(), [](const TypeUsage& a, const TypeUsage& b) { return a.bytes > b.bytes; });
  return out;
}

uint64_t parameter_count(const File& file) {
  uint64_t n = 0;
  for (const auto& t : file.tensors()) n += t.n_elements;
  return n;
}

TokenizerSummary tokenizer_summary(const File& file) {
  TokenizerSummary s;
  s.model = file.get_optional<std::string_view>("tokenizer.ggml.model").value_or("");
  s.pre = file.get_optional<std::string_view>("tokenizer.ggml.pre").value_or("");
  const Value* tokens = file.find("tokenizer.ggml.tokens");
  if (tokens && tokens->type() == ValueType::ARRAY) s.n_tokens = tokens->size();
  if (const Value* merges = file.find("tokenizer.ggml.merges"); merges && merges->type() == ValueType::ARRAY)
    s.n_merges = merges->size();
  const std::pair<std::string_view, std::string_view> roles[] = {
      {"bos", "tokenizer.ggml.bos_token_id"},
      {"eos", "tokenizer.ggml.eos_token_id"},
      {"unk", "tokenizer.ggml.unknown_token_id"},
      {"pad", "tokenizer.ggml.padding_token_id"},
  };
  for (const auto& [role, key] : roles) {
    SpecialToken t{role, file.get_optional<uint64_t>(key), std::nullopt};
    if (t.id && tokens && tokens->type() == ValueType::ARRAY && *t.id < tokens->size() &&
        tokens->at(*t.id).type() == ValueType::STRING)
      t.text = tokens->at(*t.id).as_string();
    s.specials.push_back(t);
  }
  s.has_chat_template = file.has("tokenizer.chat_template");
  s.add_bos = file.get_optional<bool>("tokenizer.ggml.add_bos_token");
  return s;
}

}  // namespace rayo::gguf
