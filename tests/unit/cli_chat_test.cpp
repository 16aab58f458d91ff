#include <gtest/gtest.h>

#include "support/paths.h"

namespace rayo {
namespace {

// Two turns through stdin, then /exit: each turn answers (greedy, so the
// answers are fixed), a model without a template gets the default format and
// says so, and the session ends cleanly.
TEST(CliChat, AnswersEachTurnAndLeavesOnExit) {
  RAYO_REQUIRE_SHARED();
  const std::string cmd = "printf 'Hello there\\nTell me a story\\n/exit\\nnever read\\n' | " +
                          test::rayo_binary().string() + " chat -t 2 -n 12 --temp 0 -m " +
                          test::shared_path("models/stories260K.gguf").string();
  const auto r = test::run_command(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no chat template; using the llama2 format"), std::string::npos) << r.output;
  // One line of answer per turn (the model's text has no newlines at -n 12).
  size_t answers = 0;
  for (size_t p = 0; (p = r.output.find('\n', p)) != std::string::npos; ++p) ++answers;
  EXPECT_EQ(answers, 3u) << r.output;  // the notice and two answers
}

TEST(CliChat, EndOfInputLeavesCleanly) {
  RAYO_REQUIRE_SHARED();
  const auto r = test::run_command(test::rayo_binary().string() + " chat -t 2 -n 4 --temp 0 -m " +
                                   test::shared_path("models/stories260K.gguf").string() + " < /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace rayo
