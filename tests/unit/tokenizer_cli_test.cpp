// `rayo tokenize` as a user runs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "support/paths.h"

namespace rayo::tokenizer {
namespace {

std::string rayo() { return test::rayo_binary().string(); }

TEST(TokenizerCli, IdsMatchLlamaCppVector) {
  RAYO_REQUIRE_SHARED();
  const std::string vocab = test::shared_path("vocab/ggml-vocab-llama-spm.gguf").string();
  // String 11 of the llama-spm vectors, "Hello world": 15043 3186 without BOS.
  auto r = test::run_command(rayo() + " tokenize -m '" + vocab + "' --ids --no-bos 'Hello world'", false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "15043 3186\n");
  r = test::run_command(rayo() + " tokenize -m '" + vocab + "' --ids 'Hello world'", false);
  EXPECT_EQ(r.output, "1 15043 3186\n");
  r = test::run_command(rayo() + " tokenize -m '" + vocab + "' 'Hello world'", false);
  EXPECT_EQ(r.output, "1\t'<s>'\n15043\t' Hello'\n3186\t' world'\n");
  r = test::run_command(rayo() + " tokenize -m '" + vocab + "' --pieces --no-bos 'Hello world'", false);
  EXPECT_EQ(r.output, "' Hello'\n' world'\n");
}

TEST(TokenizerCli, ReadsFileAndParsesSpecialTokens) {
  RAYO_REQUIRE_SHARED();
  const std::string vocab = test::shared_path("vocab/ggml-vocab-gpt-2.gguf").string();
  const auto dir = test::temp_dir("tokenizer_cli");
  const std::string path = (dir / "in.txt").string();
  std::ofstream(path) << "a<|endoftext|>";
  auto r = test::run_command(rayo() + " tokenize -m '" + vocab + "' --ids --no-bos --parse-special -f '" + path + "'",
                             false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "64 50256\n");
  r = test::run_command(rayo() + " tokenize -m '" + vocab + "' --ids --no-bos -f '" + path + "'", false);
  EXPECT_NE(r.output, "64 50256\n");
}

TEST(TokenizerCli, BadModelIsAOneLineError) {
  const auto dir = test::temp_dir("tokenizer_cli_bad");
  const std::string not_gguf = (dir / "not.gguf").string();
  std::ofstream(not_gguf) << "this is not a GGUF file";
  for (const std::string& model : {(dir / "missing.gguf").string(), not_gguf}) {
    const auto r = test::run_command(rayo() + " tokenize -m '" + model + "' hello");
    EXPECT_NE(r.exit_code, 0) << model;
    EXPECT_EQ(r.output.rfind("rayo: error: ", 0), 0u) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
}

}  // namespace
}  // namespace rayo::tokenizer
