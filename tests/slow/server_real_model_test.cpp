// `rayo serve` on the real model: a chat completion at temperature 0 answers
// each committed conversation (tests/data/smollm2/chats.json) with
// llama.cpp's greedy tokens for the rendered conversation
// (reference-chat.json), up to the first near-tie of llama.cpp's own logits.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "server_process.h"
#include "support/real_model.h"
#include "support/reference.h"
#include "tools/sse_client.h"

namespace rayo::test {
namespace {

using nlohmann::json;

TEST(ServerRealModel, ChatCompletionGivesLlamaCppGreedyTokens) {
  RAYO_REQUIRE_REAL_MODEL();
  const auto model = runtime::Model::load(real_model_path().string());
  const auto& tok = model->tokenizer();
  std::ifstream in(real_model_data("chats.json"));
  const json chats = json::parse(in);
  const auto ref = load_reference(real_model_data("reference-chat.json").string());
  ASSERT_EQ(chats.size(), ref.cases.size());
  ServerProcess server({"-m", real_model_path().string(), "-c", "512", "-t", "2", "--parallel", "2"});
  ASSERT_TRUE(server.ok()) << "rayo serve did not start";
  const double tol = logit_tolerance("SmolLM2-135M-Instruct-Q4_1");
  size_t compared = 0;
  for (size_t i = 0; i < chats.size(); ++i) {
    const auto& c = ref.cases[i];
    const size_t n = greedy_steps_before_near_tie(c, tol);
    if (n == 0) continue;  // llama.cpp's first decision is itself a near-tie
    // llama.cpp's tokens as the server reports them: the generated text and,
    // under logprobs, one piece per token; a closing end-of-generation token
    // ends the answer as "stop" and is neither text, nor a logprobs entry, nor
    // counted in completion_tokens.
    const bool stops = n == c.greedy.size() && tok.is_eog(c.greedy.back());
    const size_t n_text = stops ? n - 1 : n;
    std::string text;
    std::vector<std::string> pieces;
    for (size_t k = 0; k < n_text; ++k) {
      text += tok.token_to_piece(c.greedy[k], false);
      pieces.push_back(tok.token_to_piece(c.greedy[k], true));
    }
    const json body = {{"messages", chats[i]}, {"max_tokens", n}, {"temperature", 0}, {"logprobs", true}};
    const auto r = tools::http_post(server.address(), "/v1/chat/completions", body.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = json::parse(r.body);
    SCOPED_TRACE("chat " + std::to_string(i) + ": " + chats[i].back()["content"].get<std::string>());
    EXPECT_EQ(j["usage"]["prompt_tokens"], c.tokens.size());
    EXPECT_EQ(j["usage"]["completion_tokens"], n_text);
    const json& choice = j["choices"][0];
    EXPECT_EQ(choice["message"]["content"], text);
    EXPECT_EQ(choice["finish_reason"], stops ? "stop" : "length");
    std::vector<std::string> got;
    for (const auto& t : choice["logprobs"]["content"]) got.push_back(t["token"].get<std::string>());
    EXPECT_EQ(got, pieces);
    ++compared;
  }
  // The committed conversations are chosen so that most can be compared.
  EXPECT_GE(compared, chats.size() - 1);
  std::printf("[ server   ] %zu of %zu conversations compared with llama.cpp's greedy tokens\n", compared,
              chats.size());
}

}  // namespace
}  // namespace rayo::test
