// `rayo template` as a user runs it: prints exactly the rendered prompt, takes
// the template and special tokens from a GGUF with -m, and fails with one line
// on bad input.
#include <gtest/gtest.h>

#include <fstream>

#include "common/strings.h"
#include "gguf/writer.h"
#include "support/paths.h"

namespace {

using rayo::test::run_command;

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string quoted(const std::filesystem::path& p) { return rayo::cat("'", p.string(), "'"); }

std::string rayo_cmd() { return quoted(rayo::test::rayo_binary()) + " template "; }

class TemplateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = rayo::test::temp_dir("template-cli");
    write_file(dir_ / "chat.jinja",
               "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}"
               "{% if add_generation_prompt %}<assistant>{% endif %}{{ eos_token }}");
    write_file(dir_ / "conv.json", R"([{"role": "user", "content": "Hi é"}, {"role": "assistant", "content": "Yo"}])");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(TemplateCli, PrintsExactlyTheRenderedPrompt) {
  auto r = run_command(rayo_cmd() + "--jinja " + quoted(dir_ / "chat.jinja") + " --messages " + quoted(dir_ / "conv.json") +
                           " --bos-token '<s>' --eos-token '</s>'",
                       /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "<s><user>Hi é\n<assistant>Yo\n<assistant></s>");
}

TEST_F(TemplateCli, NoGenerationPrompt) {
  auto r = run_command(rayo_cmd() + "--jinja " + quoted(dir_ / "chat.jinja") + " --messages " + quoted(dir_ / "conv.json") +
                           " --no-generation-prompt",
                       false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "<user>Hi é\n<assistant>Yo\n");
}

TEST_F(TemplateCli, RendersASharedModelTemplate) {
  RAYO_REQUIRE_SHARED();
  auto r = run_command(rayo_cmd() + "--jinja " + quoted(rayo::test::shared_path("templates/Qwen-Qwen2.5-7B-Instruct.jinja")) +
                           " --messages " + quoted(dir_ / "conv.json"),
                       false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output,
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi é<|im_end|>\n<|im_start|>assistant\nYo<|im_end|>\n<|im_start|>assistant\n");
}

TEST_F(TemplateCli, TakesTemplateAndTokensFromTheModel) {
  rayo::gguf::Writer w;
  w.add_string("general.architecture", "qwen2");
  w.add_string("tokenizer.chat_template", "[{{ bos_token }}|{{ messages[0].content }}|{{ eos_token }}]");
  w.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<|begin|>", "<|end|>"});
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  w.write_file((dir_ / "model.gguf").string(), [](size_t, const rayo::gguf::WriterTensor&, rayo::gguf::TensorSink&) {});
  auto r = run_command(rayo_cmd() + "-m " + quoted(dir_ / "model.gguf") + " --messages " + quoted(dir_ / "conv.json"), false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "[<|begin|>|Hi é|<|end|>]");
}

TEST_F(TemplateCli, ModelWithoutTemplateUsesTheDefaultAndSaysSo) {
  RAYO_REQUIRE_SHARED();
  auto model = quoted(rayo::test::shared_path("models/llama-2-tiny-random.gguf"));
  auto r = run_command(rayo_cmd() + "-m " + model + " --messages " + quoted(dir_ / "conv.json") + " 2>/dev/null", false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "<s>[INST] Hi é [/INST] Yo </s>");
  auto with_note = run_command(rayo_cmd() + "-m " + model + " --messages " + quoted(dir_ / "conv.json"), true);
  EXPECT_NE(with_note.output.find("using the default llama2 template"), std::string::npos) << with_note.output;
}

TEST_F(TemplateCli, BadInputFailsWithOneLine) {
  write_file(dir_ / "bad.json", "[{\"role\": ");
  write_file(dir_ / "object.json", R"({"role": "user", "content": "x"})");
  write_file(dir_ / "raises.jinja", "{{ raise_exception('roles must alternate') }}");
  const std::string jinja = " --jinja " + quoted(dir_ / "chat.jinja");
  struct Case {
    std::string args;
    std::string message;
  } cases[] = {
      {jinja + " --messages " + quoted(dir_ / "bad.json"), "is not valid JSON"},
      {jinja + " --messages " + quoted(dir_ / "object.json"), "messages must be a JSON list"},
      {jinja + " --messages " + quoted(dir_ / "missing.json"), "cannot open messages file"},
      {" --jinja " + quoted(dir_ / "missing.jinja") + " --messages " + quoted(dir_ / "conv.json"), "cannot open template file"},
      {" --jinja " + quoted(dir_ / "raises.jinja") + " --messages " + quoted(dir_ / "conv.json"), "roles must alternate"},
      {" --messages " + quoted(dir_ / "conv.json"), "give exactly one of -m MODEL and --jinja FILE"},
      {" -m " + quoted(dir_ / "missing.gguf") + " --messages " + quoted(dir_ / "conv.json"), "missing.gguf"},
  };
  for (const auto& c : cases) {
    auto r = run_command(rayo_cmd() + c.args, true);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << "not one line: " << r.output;
  }
}

}  // namespace
