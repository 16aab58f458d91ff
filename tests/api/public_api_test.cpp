// The public API as a user of librayo sees it: this file is compiled with
// include/ (and tests/, for the shared-data paths) on its include path, never
// src/, and links librayo without its in-tree include directories
// (tests/CMakeLists.txt). The checks below fail the build if that ever
// changes or if the public header drags in a dependency.
#include "rayo/llm.h"

#if __has_include("runtime/session.h") || __has_include("common/error.h")
#error "src/ is on the include path: the public API test must see include/ only"
#endif
#if defined(NLOHMANN_JSON_VERSION_MAJOR) || defined(CPPHTTPLIB_VERSION) || defined(CLI11_VERSION)
#error "a public header includes a dependency of the implementation"
#endif

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "support/paths.h"

namespace {

std::string stories() { return rayo::test::shared_path("models/stories260K.gguf").string(); }

// True when `s` is a whole number of well-formed UTF-8 characters.
bool whole_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    i += n;
  }
  return true;
}

// llama.cpp's greedy continuation, which `rayo run -t 2 --temp 0 -n 16 --json
// -p 'Once upon a time'` also gives (CliRun.JsonGreedyMatchesLlamaCpp).
const std::vector<int32_t> kGreedyOnceUponATime = {432, 383, 286, 261, 376, 298, 315, 421,
                                                   395, 317, 426, 338, 401, 396, 267, 337};

TEST(PublicApi, GreedyTokensEqualRayoRun) {
  RAYO_REQUIRE_SHARED();
  rayo::Llm llm(stories(), {.n_threads = 2});
  const rayo::Completion c = llm.create_completion("Once upon a time", {.max_tokens = 16, .temperature = 0});
  EXPECT_EQ(c.tokens, kGreedyOnceUponATime);
  EXPECT_EQ(c.finish_reason, "length");
  EXPECT_EQ(c.completion_tokens, 16);
  EXPECT_EQ(c.prompt_tokens, static_cast<int64_t>(llm.tokenize("Once upon a time", true, true).size()));
  EXPECT_FALSE(c.text.empty());

  // The second call finds the prompt in the cache and evaluates only its last token.
  const rayo::Completion again = llm.create_completion("Once upon a time", {.max_tokens = 16, .temperature = 0});
  EXPECT_EQ(again.tokens, kGreedyOnceUponATime);
  EXPECT_EQ(again.text, c.text);
}

TEST(PublicApi, ModelFacts) {
  RAYO_REQUIRE_SHARED();
  rayo::Llm llm(stories(), {.n_ctx = 0, .n_threads = 2, .device = "cpu"});
  EXPECT_EQ(llm.n_vocab(), 512);
  EXPECT_EQ(llm.device(), "cpu");
  const auto& meta = llm.metadata();
  ASSERT_TRUE(meta.count("general.architecture"));
  EXPECT_EQ(meta.at("general.architecture"), "llama");
  EXPECT_EQ(meta.count("tokenizer.ggml.tokens"), 0u);  // arrays are left out, as llama.cpp does
  // n_ctx 0 is the training context.
  EXPECT_EQ(std::to_string(llm.n_ctx()), meta.at("llama.context_length"));
  EXPECT_EQ(llm.token_bos(), 1);
  EXPECT_EQ(llm.token_eos(), 2);

  const auto ids = llm.tokenize("Once upon a time", /*add_special=*/false);
  ASSERT_FALSE(ids.empty());
  EXPECT_NE(ids.front(), llm.token_bos());
  EXPECT_EQ(llm.detokenize(ids), "Once upon a time");
  EXPECT_EQ(llm.tokenize("Once upon a time").front(), llm.token_bos());
}

TEST(PublicApi, StreamedPiecesMakeTheText) {
  RAYO_REQUIRE_SHARED();
  rayo::Llm llm(stories(), {.n_threads = 2, .seed = 7});
  std::string streamed;
  size_t pieces = 0;
  const rayo::Completion c = llm.create_completion(
      "Once upon a time", {.max_tokens = 48, .seed = 42}, [&](std::string_view piece) {
        EXPECT_FALSE(piece.empty());
        EXPECT_TRUE(whole_utf8(std::string(piece))) << piece;
        streamed += piece;
        ++pieces;
        return true;
      });
  EXPECT_EQ(streamed, c.text);
  EXPECT_GT(pieces, 1u);
  EXPECT_EQ(c.completion_tokens, static_cast<int64_t>(c.tokens.size()));
}

TEST(PublicApi, StopStringsAreNeverStreamed) {
  RAYO_REQUIRE_SHARED();
  rayo::Llm llm(stories(), {.n_threads = 2});
  const rayo::Completion whole = llm.create_completion("Once upon a time", {.max_tokens = 16, .temperature = 0});
  // Stop at the third word of the greedy text: the text ends before it.
  const size_t cut = whole.text.find(' ', whole.text.find(' ', 1) + 1);
  ASSERT_NE(cut, std::string::npos) << whole.text;
  const std::string stop = whole.text.substr(cut, 4);
  std::string streamed;
  const rayo::Completion c = llm.create_completion(
      "Once upon a time", {.max_tokens = 16, .temperature = 0, .stop = {stop}}, [&](std::string_view piece) {
        streamed += piece;
        return true;
      });
  EXPECT_EQ(c.text, whole.text.substr(0, cut));
  EXPECT_EQ(streamed, c.text);
  EXPECT_EQ(c.finish_reason, "stop");
}

TEST(PublicApi, CallbackStopsTheGeneration) {
  RAYO_REQUIRE_SHARED();
  rayo::Llm llm(stories(), {.n_threads = 2});
  std::string streamed;
  int calls = 0;
  const rayo::Completion c = llm.create_completion(
      "Once upon a time", {.max_tokens = 32, .temperature = 0}, [&](std::string_view piece) {
        streamed += piece;
        return ++calls < 3;
      });
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(c.text, streamed);
  EXPECT_EQ(c.finish_reason, "stop");
  EXPECT_LT(c.completion_tokens, 32);
  ASSERT_LE(c.tokens.size(), kGreedyOnceUponATime.size());
  EXPECT_TRUE(std::equal(c.tokens.begin(), c.tokens.end(), kGreedyOnceUponATime.begin()));
}

TEST(PublicApi, SeedsRepeat) {
  RAYO_REQUIRE_SHARED();
  const rayo::CompletionOptions sampled{.max_tokens = 24, .seed = 1234};
  rayo::Llm a(stories(), {.n_threads = 2});
  rayo::Llm b(stories(), {.n_threads = 2});
  EXPECT_EQ(a.create_completion("Once upon a time", sampled).tokens,
            b.create_completion("Once upon a time", sampled).tokens);
  // Without a seed of its own, a call draws one from the Llm's seed.
  rayo::Llm c(stories(), {.n_threads = 2, .seed = 5});
  rayo::Llm d(stories(), {.n_threads = 2, .seed = 5});
  const rayo::CompletionOptions unseeded{.max_tokens = 24};
  EXPECT_EQ(c.create_completion("Once upon a time", unseeded).tokens,
            d.create_completion("Once upon a time", unseeded).tokens);
}

// Asking for logprobs brings the logits to the host and samples there: the
// tokens stay those of a call without them, greedy or sampled.
TEST(PublicApi, LogprobsLeaveTheTokensAlone) {
  RAYO_REQUIRE_SHARED();
  rayo::Llm llm(stories(), {.n_threads = 2});
  for (const rayo::CompletionOptions& options : {rayo::CompletionOptions{.max_tokens = 16, .temperature = 0},
                                                rayo::CompletionOptions{.max_tokens = 16, .seed = 99}}) {
    const rayo::Completion plain = llm.create_completion("Once upon a time", options);
    rayo::CompletionOptions with = options;
    with.logprobs = 3;
    const rayo::Completion scored = llm.create_completion("Once upon a time", with);
    EXPECT_EQ(scored.tokens, plain.tokens);
    EXPECT_TRUE(plain.logprobs.empty());
    ASSERT_EQ(scored.logprobs.size(), scored.tokens.size());
    for (size_t i = 0; i < scored.tokens.size(); ++i) {
      const rayo::TokenLogprobs& t = scored.logprobs[i];
      EXPECT_EQ(t.token, scored.tokens[i]);
      EXPECT_LE(t.logprob, 0.0f);
      ASSERT_EQ(t.top.size(), 3u);
      EXPECT_GE(t.top[0].logprob, t.top[1].logprob);
      EXPECT_GE(t.top[0].logprob, t.logprob);
      if (options.temperature <= 0) {
        EXPECT_EQ(t.top[0].token, t.token);
      }
    }
  }
  EXPECT_THROW(llm.create_completion("Once", {.logprobs = 21}), rayo::Error);
}

// No shared model carries a chat template, so stories260K gets the default
// (Llama-2) format, as `rayo chat` gives it: the answer is `rayo chat`'s.
TEST(PublicApi, ChatCompletionAnswersAsRayoChat) {
  RAYO_REQUIRE_SHARED();
  rayo::Llm llm(stories(), {.n_threads = 2});
  const std::vector<rayo::ChatMessage> messages = {{"user", "Hello there"}};
  const std::string prompt = llm.apply_chat_template(messages);
  EXPECT_EQ(prompt.rfind("<s>[INST]", 0), 0u) << prompt;
  EXPECT_NE(prompt.find("Hello there"), std::string::npos) << prompt;
  const rayo::Completion c = llm.create_chat_completion(messages, {.max_tokens = 12, .temperature = 0});
  // The template writes the BOS token itself, so none is added.
  EXPECT_EQ(c.prompt_tokens, static_cast<int64_t>(llm.tokenize(prompt, false, true).size()));
  EXPECT_EQ(c.completion_tokens, 12);

  const auto r = rayo::test::run_command("printf 'Hello there\\n/exit\\n' | " + rayo::test::rayo_binary().string() +
                                             " chat -t 2 -n 12 --temp 0 -m " + stories(),
                                         /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, c.text + "\n");
}

TEST(PublicApi, FailuresThrowOneLine) {
  RAYO_REQUIRE_SHARED();
  try {
    rayo::Llm llm("/nonexistent/model.gguf");
    FAIL() << "loaded a missing file";
  } catch (const rayo::Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("/nonexistent/model.gguf"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  rayo::Llm llm(stories(), {.n_ctx = 8, .n_threads = 2});
  EXPECT_EQ(llm.n_ctx(), 8);
  try {
    llm.create_completion("Once upon a time there was a little girl named Lily");
    FAIL() << "a prompt longer than the context was accepted";
  } catch (const rayo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit the context of 8"), std::string::npos) << e.what();
  }
  // Bad sampling options are named as the API spells them.
  for (const auto& [options, name] : {std::pair<rayo::CompletionOptions, std::string>{{.top_p = 2}, "top_p must"},
                                      {{.min_p = -1}, "min_p must"},
                                      {{.repeat_penalty = 0}, "repeat_penalty must"}}) {
    try {
      llm.create_completion("Once", options);
      FAIL() << name << " was accepted";
    } catch (const rayo::Error& e) {
      EXPECT_EQ(std::string(e.what()).find(name), 0u) << e.what();
    }
  }
  EXPECT_THROW(llm.detokenize({100000}), std::runtime_error);  // rayo::Error is a std::runtime_error
  EXPECT_THROW(rayo::Llm(stories(), {.device = "tpu"}), rayo::Error);
  // After a failure the Llm still generates.
  EXPECT_EQ(llm.create_completion("Once", {.max_tokens = 2, .temperature = 0}).completion_tokens, 2);
}

}  // namespace
