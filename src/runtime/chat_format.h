#pragma once
// How a model's conversations become prompt text: the chat template its GGUF
// carries (or, when it has none, the default for its architecture) with its
// BOS / EOS token text, ready for the assistant's turn. `rayo chat`, the
// server's chat completions and the public API's create_chat_completion all
// render through it, so the three agree.
#include <string>

#include "runtime/model.h"
#include "tokenizer/chat_template.h"

namespace rayo::runtime {

struct ChatFormat {
  std::string source;                       // the Jinja template
  std::string fallback;                     // the default's name ("chatml", "llama2") when the file has none, else empty
  tokenizer::ChatTemplateOptions options;  // BOS / EOS text, add_generation_prompt

  // Whether a prompt rendered with it still wants the vocabulary's BOS token
  // added: templates usually write the BOS text themselves.
  bool needs_bos(const std::string& prompt) const {
    return options.bos_token.empty() || prompt.rfind(options.bos_token, 0) != 0;
  }
};

ChatFormat chat_format(const Model& model);

}  // namespace rayo::runtime
