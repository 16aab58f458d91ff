#include "runtime/chat_format.h"

namespace rayo::runtime {

ChatFormat chat_format(const Model& model) {
  const auto& tok = model.tokenizer();
  ChatFormat f;
  f.source = tok.chat_template();
  if (f.source.empty()) {
    auto fallback = tokenizer::default_chat_template(model.spec().arch);
    f.source = std::move(fallback.source);
    f.fallback = std::move(fallback.name);
  }
  auto text = [&](int32_t id) { return id >= 0 && id < tok.n_vocab() ? tok.token_text(id) : std::string(); };
  f.options.bos_token = text(tok.bos());
  f.options.eos_token = text(tok.eos());
  f.options.add_generation_prompt = true;
  return f;
}

}  // namespace rayo::runtime
