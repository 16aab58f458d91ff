// The real model's prompts reach it as the tokens llama.cpp read
// (tests/data/smollm2/): rayo tokenizes the committed prompts into llama.cpp's
// tokens; the chat format that `rayo chat`, the server and rayo::Llm render
// with turns chats.json into exactly the committed rendered prompts; and
// `rayo chat`, given a question on its input, answers with llama.cpp's greedy
// continuation of that conversation. The teacher-forced logits, greedy
// continuations and perplexity are ModelParity's and PerplexityParity's
// RealModel cases.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "runtime/chat_format.h"
#include "runtime/model.h"
#include "support/paths.h"
#include "support/real_model.h"
#include "support/reference.h"
#include "tokenizer/chat_template.h"

namespace rayo {
namespace {

nlohmann::ordered_json committed_chats() {
  std::ifstream in(test::real_model_data("chats.json"));
  return nlohmann::ordered_json::parse(in);
}

// What llama.cpp's greedy_text holds for the first n greedy tokens: their
// pieces, special tokens (the closing <|im_end|>) as no text.
std::string greedy_text(const runtime::Model& model, const test::ReferenceCase& c, size_t n) {
  std::string text;
  for (size_t i = 0; i < n; ++i) text += model.tokenizer().token_to_piece(c.greedy[i], false);
  return text;
}

TEST(RealModel, PromptsTokenizeAsLlamaCpp) {
  RAYO_REQUIRE_REAL_MODEL();
  const auto model = runtime::Model::load(test::real_model_path().string());
  const auto& tok = model->tokenizer();
  // refgen parsed special-token text only in the chat-rendered prompts.
  const std::pair<const char*, bool> references[] = {{"reference-plain.json", false}, {"reference-chat.json", true}};
  for (const auto& [file, parse_special] : references) {
    const auto ref = test::load_reference(test::real_model_data(file).string());
    EXPECT_EQ(tok.n_vocab(), ref.n_vocab);
    ASSERT_FALSE(ref.cases.empty()) << file;
    for (const auto& c : ref.cases) EXPECT_EQ(tok.encode(c.prompt, true, parse_special), c.tokens) << c.prompt;
  }
}

TEST(RealModel, ChatFormatRendersTheCommittedPrompts) {
  RAYO_REQUIRE_REAL_MODEL();
  const auto model = runtime::Model::load(test::real_model_path().string());
  const auto format = runtime::chat_format(*model);
  EXPECT_TRUE(format.fallback.empty()) << "the file carries its own chat template";
  const auto chats = committed_chats();
  const auto ref = test::load_reference(test::real_model_data("reference-chat.json").string());
  ASSERT_EQ(chats.size(), ref.cases.size());
  for (size_t i = 0; i < chats.size(); ++i) {
    const std::string prompt = tokenizer::apply_chat_template(format.source, chats[i], format.options);
    EXPECT_EQ(prompt, ref.cases[i].prompt) << "chat " << i;
    // As the server and `rayo chat` tokenize a rendered conversation.
    const bool add_bos = model->tokenizer().add_bos() && format.needs_bos(prompt);
    EXPECT_EQ(model->tokenizer().encode(prompt, add_bos, true), ref.cases[i].tokens) << "chat " << i;
  }
}

TEST(RealModel, ChatCommandAnswersWithLlamaCppGreedyText) {
  RAYO_REQUIRE_REAL_MODEL();
  const auto model = runtime::Model::load(test::real_model_path().string());
  const auto chats = committed_chats();
  const auto ref = test::load_reference(test::real_model_data("reference-chat.json").string());
  // The first conversation is one user message, as `rayo chat` reads it from its input.
  ASSERT_EQ(chats[0].size(), 1u);
  ASSERT_EQ(chats[0][0]["role"], "user");
  const auto& c = ref.cases[0];
  const size_t n = test::greedy_steps_before_near_tie(c, test::logit_tolerance("SmolLM2-135M-Instruct-Q4_1"));
  ASSERT_GT(n, 0u);
  const auto dir = test::temp_dir("real-chat");
  const auto input = dir / "question.txt";
  std::ofstream(input) << chats[0][0]["content"].get<std::string>() << "\n";
  const auto r = test::run_command(test::rayo_binary().string() + " chat -t 2 --temp 0 -n " + std::to_string(n) +
                                       " -m " + test::real_model_path().string() + " < " + input.string(),
                                   /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, greedy_text(*model, c, n) + "\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rayo
