#include "tokenizer/chat_template.h"

#include <utility>
#include <vector>

#include "common/error.h"

namespace rayo::tokenizer {

// Fails when a JSON value nests deeper than templates may see. Iterative, so
// that checking a hostile document cannot itself exhaust the stack (copying
// and converting it, which recurse, happen only after this check).
static void check_nesting(const nlohmann::ordered_json& root, const char* what) {
  std::vector<std::pair<const nlohmann::ordered_json*, uint32_t>> pending{{&root, 0}};
  while (!pending.empty()) {
    auto [j, depth] = pending.back();
    pending.pop_back();
    if (depth > jinja::kMaxValueDepth) fail(what, " nested more than ", jinja::kMaxValueDepth, " levels deep");
    if (j->is_structured())
      for (const auto& child : *j) pending.emplace_back(&child, depth + 1);
  }
}

std::string apply_chat_template(std::string_view template_source, const nlohmann::ordered_json& messages,
                                const ChatTemplateOptions& options) {
  check_nesting(messages, "messages");
  if (options.tools) check_nesting(*options.tools, "tools");
  if (options.documents) check_nesting(*options.documents, "documents");
  check_nesting(options.extra_context, "template variables");
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

// Gemma 3's own template (google/gemma-3-*-it, as its GGUFs carry it): a system
// message is folded into the first user turn, the assistant's role is "model",
// images are <start_of_image>.
static constexpr const char* kGemma3 =
    "{{ bos_token }}\n"
    "{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}\n"
    "    {%- endif -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n"
    "{%- else -%}\n"
    "    {%- set first_user_prefix = \"\" -%}\n"
    "    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    "        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n"
    "    {%- endif -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n"
    "        {%- set role = \"model\" -%}\n"
    "    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n"
    "    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n"
    "        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n"
    "        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n"
    "                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n"
    "                {{ item['text'] | trim }}\n"
    "            {%- endif -%}\n"
    "        {%- endfor -%}\n"
    "    {%- else -%}\n"
    "        {{ raise_exception(\"Invalid content type\") }}\n"
    "    {%- endif -%}\n"
    "    {{ '<end_of_turn>\\n' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\\n'}}\n"
    "{%- endif -%}\n";

DefaultChatTemplate default_chat_template(std::string_view architecture) {
  if (architecture == "llama") return {"llama2", std::string(kContentMacro) + kLlama2};
  if (architecture == "gemma3") return {"gemma", kGemma3};
  return {"chatml", std::string(kContentMacro) + kChatML};
}

}  // namespace rayo::tokenizer
