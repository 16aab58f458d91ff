// apply_chat_template: the variables a chat template sees, the defaults used
// when a model has no template, and the errors for malformed conversations.
#include <gtest/gtest.h>

#include "common/error.h"
#include "tokenizer/chat_template.h"

namespace rayo::tokenizer {
namespace {

using nlohmann::ordered_json;

const ordered_json kConversation = ordered_json::parse(R"([
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": "Hi"},
  {"role": "assistant", "content": "Hello"},
  {"role": "user", "content": [{"type": "text", "text": "Part A "}, {"type": "image"}, {"type": "text", "text": "B"}]}
])");

TEST(ChatTemplate, PassesTokensAndGenerationFlag) {
  ChatTemplateOptions options;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  const char* t = "{{ bos_token }}{{ messages|length }}{{ eos_token }}{% if add_generation_prompt %}+{% endif %}";
  EXPECT_EQ(apply_chat_template(t, kConversation, options), "<s>4</s>+");
  options.add_generation_prompt = false;
  EXPECT_EQ(apply_chat_template(t, kConversation, options), "<s>4</s>");
}

TEST(ChatTemplate, ToolsAndDocumentsAreNoneUnlessGiven) {
  ChatTemplateOptions options;
  const char* t = "{{ tools is defined }} {{ tools is none }} {{ documents is none }}{% if tools %} {{ tools|tojson }}{% endif %}";
  EXPECT_EQ(apply_chat_template(t, kConversation, options), "True True True");
  options.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  EXPECT_EQ(apply_chat_template(t, kConversation, options),
            R"(True False True [{"type": "function", "function": {"name": "f"}}])");
}

TEST(ChatTemplate, ExtraVariablesOverrideDefaults) {
  ChatTemplateOptions options;
  options.extra_context = {{"enable_thinking", false}, {"add_generation_prompt", "custom"}};
  EXPECT_EQ(apply_chat_template("{{ enable_thinking }} {{ add_generation_prompt }}", kConversation, options),
            "False custom");
}

TEST(ChatTemplate, DefaultChatMLForQwenAndUnknownArchitectures) {
  for (const char* arch : {"qwen2", "qwen3", "something-new", ""}) {
    auto d = default_chat_template(arch);
    EXPECT_EQ(d.name, "chatml") << arch;
  }
  auto d = default_chat_template("qwen3");
  ChatTemplateOptions options;
  EXPECT_EQ(apply_chat_template(d.source, kConversation, options),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n"
            "<|im_start|>user\nPart A B<|im_end|>\n<|im_start|>assistant\n");
  options.add_generation_prompt = false;
  EXPECT_EQ(apply_chat_template(d.source, ordered_json::parse(R"([{"role": "user", "content": "x"}])"), options),
            "<|im_start|>user\nx<|im_end|>\n");
}

TEST(ChatTemplate, DefaultLlama2ForLlama) {
  auto d = default_chat_template("llama");
  EXPECT_EQ(d.name, "llama2");
  ChatTemplateOptions options;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  EXPECT_EQ(apply_chat_template(d.source, kConversation, options),
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello </s><s>[INST] Part A B [/INST]");
}

// Gemma 3's template (the default for gemma3 files without one, and what
// `rayo synth --arch gemma3` writes), rendered as Hugging Face renders it: the
// system message opens the first user turn, the assistant is "model", text
// parts are trimmed and images marked.
TEST(ChatTemplate, Gemma3FoldsTheSystemMessageIntoTheFirstTurn) {
  auto d = default_chat_template("gemma3");
  EXPECT_EQ(d.name, "gemma");
  ChatTemplateOptions options;
  options.bos_token = "<bos>";
  EXPECT_EQ(apply_chat_template(d.source, kConversation, options),
            "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n"
            "<start_of_turn>user\nPart A<start_of_image>B<end_of_turn>\n<start_of_turn>model\n");
  options.add_generation_prompt = false;
  EXPECT_EQ(apply_chat_template(d.source, ordered_json::parse(R"([{"role": "user", "content": " x "}])"), options),
            "<bos><start_of_turn>user\nx<end_of_turn>\n");
  EXPECT_THROW(apply_chat_template(d.source, ordered_json::parse(R"([{"role": "assistant", "content": "x"}])"), options),
               Error);
}

TEST(ChatTemplate, RejectsConversationsThatAreNotLists) {
  ChatTemplateOptions options;
  for (const char* bad : {R"({"role": "user"})", R"("text")", R"([1, 2])", "null"}) {
    try {
      apply_chat_template("{{ messages }}", ordered_json::parse(bad), options);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const rayo::Error& e) {
      EXPECT_NE(std::string(e.what()).find("message"), std::string::npos) << e.what();
    }
  }
}

TEST(ChatTemplate, TemplateErrorsSurfaceAsRayoErrors) {
  ChatTemplateOptions options;
  EXPECT_THROW(apply_chat_template("{% if %}", kConversation, options), rayo::Error);
  try {
    apply_chat_template("{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}",
                        kConversation, options);
    ADD_FAILURE() << "no error";
  } catch (const rayo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("System role not supported"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rayo::tokenizer
