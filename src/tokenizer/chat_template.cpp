#include "tokenizer/chat_template.h"

#include "common/error.h"

namespace rayo::tokenizer {

std::string apply_chat_template(std::string_view template_source, const nlohmann::ordered_json& messages,
                                const ChatTemplateOptions& options) {
  if (!messages.is_array()) fail("messages must be a JSON list of {\"role\": ..., \"content\": ...} objects");
  for (size_t i = 0; i < messages.size(); ++i)
    if (!messages[i].is_object()) fail("message ", i, " is not a JSON object");
  if (!options.extra_context.is_object() && !options.extra_context.is_null())
    fail("extra template variables must be a JSON object");

  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = messages;
  context["tools"] = options.tools.value_or(nlohmann::ordered_json());
  context["documents"] = options.documents.value_or(nlohmann::ordered_json());
  context["add_generation_prompt"] = options.add_generation_prompt;
  context["bos_token"] = options.bos_token;
  context["eos_token"] = options.eos_token;
  if (options.extra_context.is_object())
    for (auto it = options.extra_context.begin(); it != options.extra_context.end(); ++it) context[it.key()] = it.value();

  jinja::Template tmpl(template_source);
  jinja::RenderOptions render_options;
  render_options.limits = options.limits;
  render_options.clock = options.clock;
  return tmpl.render(context, render_options);
}

// Both defaults accept content as a string or as a list of parts, of which the
// text parts are joined.
static constexpr const char* kContentMacro =
    "{%- macro text_of(content) -%}\n"
    "{%- if content is string -%}{{ content }}\n"
    "{%- elif content is iterable -%}\n"
    "{%- for part in content if part is mapping and part.type == 'text' -%}{{ part.text }}{%- endfor -%}\n"
    "{%- endif -%}\n"
    "{%- endmacro -%}\n";

static constexpr const char* kChatML =
    "{%- for message in messages -%}\n"
    "{{ '<|im_start|>' ~ message.role ~ '\\n' ~ text_of(message.content) ~ '<|im_end|>\\n' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}";

// Llama-2 chat: each user turn is "<s>[INST] text [/INST]", each assistant reply
// " text </s>"; a leading system message is folded into the first user turn
// inside <<SYS>> markers.
static constexpr const char* kLlama2 =
    "{%- set ns = namespace(system='') -%}\n"
    "{%- for message in messages -%}\n"
    "{%- if message.role == 'system' -%}\n"
    "{%- set ns.system = '<<SYS>>\\n' ~ text_of(message.content) ~ '\\n<</SYS>>\\n\\n' -%}\n"
    "{%- elif message.role == 'user' -%}\n"
    "{{ bos_token ~ '[INST] ' ~ ns.system ~ (text_of(message.content) | trim) ~ ' [/INST]' }}\n"
    "{%- set ns.system = '' -%}\n"
    "{%- elif message.role == 'assistant' -%}\n"
    "{{ ' ' ~ (text_of(message.content) | trim) ~ ' ' ~ eos_token }}\n"
    "{%- endif -%}\n"
    "{%- endfor -%}";

DefaultChatTemplate default_chat_template(std::string_view architecture) {
  if (architecture == "llama") return {"llama2", std::string(kContentMacro) + kLlama2};
  return {"chatml", std::string(kContentMacro) + kChatML};
}

}  // namespace rayo::tokenizer
