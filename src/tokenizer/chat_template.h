#pragma once
// Turns a conversation into the prompt text a model was trained on, by
// rendering the model's chat template exactly as Hugging Face's
// apply_chat_template does (see jinja/template.h).
//
//   ChatTemplateOptions opts;
//   opts.bos_token = "<s>";
//   std::string prompt = apply_chat_template(gguf_template, messages, opts);
//
// Messages are OpenAI-style: [{"role": "user", "content": "..."}, ...], where
// content may also be a list of parts, and assistant messages may carry
// tool_calls. Object key order is kept (ordered_json), since templates that
// print JSON (tojson) show keys in the order given.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "jinja/template.h"

namespace rayo::tokenizer {

struct ChatTemplateOptions {
  std::string bos_token;
  std::string eos_token;
  bool add_generation_prompt = true;
  // Tool definitions and documents (RAG). Absent means None, as Hugging Face
  // passes them: `{% if tools %}` is false, `tools is defined` is true.
  std::optional<nlohmann::ordered_json> tools;
  std::optional<nlohmann::ordered_json> documents;
  // Further variables (e.g. {"enable_thinking": false}); they override the above.
  nlohmann::ordered_json extra_context = nlohmann::ordered_json::object();
  jinja::Clock clock;  // what strftime_now reads; the local time when empty
  jinja::RenderLimits limits;
};

// Throws rayo::Error when messages is not a list of objects, the template does
// not parse, or the template fails or raises (raise_exception) while rendering.
std::string apply_chat_template(std::string_view template_source, const nlohmann::ordered_json& messages,
                                const ChatTemplateOptions& options);

// The template used for a model whose GGUF has none (no tokenizer.chat_template).
struct DefaultChatTemplate {
  std::string name;    // "chatml" or "llama2"
  std::string source;  // Jinja source
};

// ChatML (<|im_start|>role ... <|im_end|>) for qwen2, qwen3 and any unknown
// architecture; the Llama-2 chat format ([INST] ... [/INST], system prompt in
// <<SYS>>) for llama, whose chat models without an embedded template are
// Llama-2 and Mistral derivatives.
DefaultChatTemplate default_chat_template(std::string_view architecture);

}  // namespace rayo::tokenizer
