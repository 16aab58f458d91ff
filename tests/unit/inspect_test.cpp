// `rayo inspect` as a user runs it: the binary on shared models and on bad files.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/paths.h"

namespace rayo {
namespace {

test::CommandResult inspect(const std::string& args, bool merge_stderr = false) {
  return test::run_command(test::rayo_binary().string() + " inspect " + args, merge_stderr);
}

TEST(Inspect, JsonReportsSynthLlamaQ4KM) {
  RAYO_REQUIRE_SHARED();
  const auto r = inspect(test::shared_path("models/synth-llama-q4_k_m.gguf").string() + " --json --tensors");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["runnable"], true);
  const auto& hp = j["hyperparameters"];
  EXPECT_EQ(hp["n_layers"], 2);
  EXPECT_EQ(hp["n_embd"], 512);
  EXPECT_EQ(hp["n_head"], 8);
  EXPECT_EQ(hp["n_head_kv"], 4);
  EXPECT_EQ(hp["n_ff"], 1536);
  EXPECT_EQ(hp["head_dim"], 64);
  EXPECT_EQ(hp["n_vocab"], 512);
  EXPECT_EQ(hp["rms_eps"], 1e-5);
  EXPECT_EQ(hp["rope_type"], "normal");
  EXPECT_EQ(j["types"]["Q4_K"]["tensors"], 13);
  EXPECT_EQ(j["types"]["Q6_K"]["tensors"], 3);
  EXPECT_EQ(j["types"]["F32"]["tensors"], 5);
  EXPECT_EQ(j["types"].size(), 3u);
  EXPECT_EQ(j["tensor_count"], 21);
  EXPECT_EQ(j["tokenizer"]["model"], "llama");
  EXPECT_EQ(j["tokenizer"]["bos"]["id"], 1);
  EXPECT_EQ(j["tokenizer"]["bos"]["text"], "<s>");
  EXPECT_EQ(j["tokenizer"]["eos"]["text"], "</s>");
  EXPECT_EQ(j["tokenizer"]["chat_template"], false);
  ASSERT_EQ(j["tensors"].size(), 21u);
  uint64_t params = 0;
  for (const auto& t : j["tensors"]) {
    uint64_t n = 1;
    for (const auto& d : t["shape"]) n *= d.get<uint64_t>();
    params += n;
  }
  EXPECT_EQ(j["parameters"], params);
}

TEST(Inspect, TextShowsTokenizerAndMix) {
  RAYO_REQUIRE_SHARED();
  const auto r = inspect(test::shared_path("models/synth-qwen2-q4_k_m.gguf").string() + " --tensors");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("architecture  qwen2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("model gpt2, pre-tokenizer gpt-2, 50257 tokens, 50000 merges"), std::string::npos);
  EXPECT_NE(r.output.find("tied to token_embd"), std::string::npos);
  EXPECT_NE(r.output.find("\"blk.1.ffn_down.weight\""), std::string::npos);
  EXPECT_NE(r.output.find("Q6_K"), std::string::npos);
}

TEST(Inspect, VocabularyOnlyFileIsReportedNotRunnable) {
  RAYO_REQUIRE_SHARED();
  const auto r = inspect(test::shared_path("vocab/ggml-vocab-llama-spm.gguf").string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["runnable"], false);
  EXPECT_EQ(j["tensor_count"], 0);
  EXPECT_EQ(j["tokenizer"]["n_tokens"], 32000);
}

TEST(Inspect, InvalidFileIsOneLineError) {
  const auto dir = test::temp_dir("inspect");
  const auto bad = dir / "bad.gguf";
  std::ofstream(bad) << "GGUF\x03";
  const auto r = inspect(bad.string(), true);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.output, "rayo: error: " + bad.string() + ": unexpected end of file in the version (at offset 4)\n");
  const auto missing = inspect((dir / "missing.gguf").string(), true);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_EQ(missing.output.rfind("rayo: error: ", 0), 0u);
  EXPECT_EQ(std::count(missing.output.begin(), missing.output.end(), '\n'), 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rayo
