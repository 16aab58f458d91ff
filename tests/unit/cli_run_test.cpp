// The generation commands as a user meets them: output, summaries and the
// one-line errors for bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/paths.h"

namespace rayo {
namespace {

std::string rayo() { return test::rayo_binary().string(); }
std::string stories() { return test::shared_path("models/stories260K.gguf").string(); }

TEST(CliRun, GreedyGenerationMatchesLlamaCpp) {
  RAYO_REQUIRE_SHARED();
  const auto r = test::run_command(rayo() + " run -t 2 --temp 0 -n 16 --json -p 'Once upon a time' -m " + stories(),
                                   false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["prompt_tokens"], nlohmann::json({1, 403, 407, 261, 378}));
  // llama.cpp's greedy continuation (shared/reference/stories260K.json).
  EXPECT_EQ(j["tokens"], nlohmann::json({432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337}))
      << r.output;
  EXPECT_EQ(j["text"].get<std::string>().substr(0, 24), ", there was a little gir");
  EXPECT_EQ(j["finish_reason"], "length");
}

TEST(CliRun, StreamsTextAndEndsWithASummary) {
  RAYO_REQUIRE_SHARED();
  const auto r = test::run_command(rayo() + " run -t 2 --temp 0 -n 8 -p 'Once upon a time' -m " + stories());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(", there was a little girl"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("generation: 8 tokens"), std::string::npos) << r.output;
}

// llama-bench's JSON: one object per test with its field names, and the weight
// bytes one generated token reads (for the roofline), which fusion must not hide.
TEST(CliBench, JsonHasLlamaBenchFieldsTheBytesReadPerTokenAndTheRoofline) {
  RAYO_REQUIRE_SHARED();
  const auto r = test::run_command(rayo() + " bench -t 2 -p 16 -n 8 -r 2 --json -m " + stories(), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j.size(), 2u) << r.output;
  const auto& pp = j[0];
  const auto& tg = j[1];
  EXPECT_EQ(pp["n_prompt"], 16);
  EXPECT_EQ(pp["n_gen"], 0);
  EXPECT_EQ(tg["n_prompt"], 0);
  EXPECT_EQ(tg["n_gen"], 8);
  for (const auto& t : j) {
    EXPECT_GT(t["avg_ts"].get<double>(), 0);
    EXPECT_GE(t["stddev_ts"].get<double>(), 0);
    EXPECT_EQ(t["samples_ts"].size(), 2u);
    EXPECT_EQ(t["n_threads"], 2);
  }
  // Every matrix once: more than half of this model's bytes (the rest is the
  // embedding table, of which a token reads one row, and the norms).
  const auto bytes = tg["bytes_per_token"].get<int64_t>();
  EXPECT_GT(bytes, tg["model_size"].get<int64_t>() / 2) << r.output;
  EXPECT_LE(bytes, tg["model_size"].get<int64_t>());
  // The KV cache a tg8 step reads on average: 4.5 positions of 5 layers x 4
  // KV heads x (8 + 8) f16 values.
  EXPECT_EQ(tg["kv_bytes_per_token"], 2880);
  EXPECT_EQ(pp["kv_bytes_per_token"], 0);
  // The roofline: the bandwidth measured in the run, and tg's fraction of it.
  const double bandwidth = tg["memory_bandwidth"].get<double>();
  EXPECT_GT(bandwidth, 1e9) << "any machine streams more than 1 GB/s";
  EXPECT_DOUBLE_EQ(tg["roofline_fraction"].get<double>(),
                   (bytes + 2880) * tg["avg_ts"].get<double>() / bandwidth);
  EXPECT_EQ(pp["roofline_fraction"].get<double>(), 0.0);
  EXPECT_GT(tg["start_seconds"].get<double>(), 0.0);
}

// -d: each test after that many tokens already in the context (as llama-bench's
// -d), named like llama-bench's ("tg4 @ d32"), and the KV cache read per token
// counted from the depth.
TEST(CliBench, DepthRunsEachTestAfterAFilledContext) {
  RAYO_REQUIRE_SHARED();
  const auto r = test::run_command(rayo() + " bench -t 2 -p 0 -n 4 -d 0,32 -r 1 --json -m " + stories(), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j.size(), 2u) << r.output;
  EXPECT_EQ(j[0]["n_depth"], 0);
  EXPECT_EQ(j[1]["n_depth"], 32);
  // stories260K: 5 layers x 4 KV heads x (8 + 8) halves = 640 bytes a position;
  // a step of tg4 after d positions reads d + 2.5 of them on average.
  EXPECT_EQ(j[0]["kv_bytes_per_token"], 640 * 5 / 2);
  EXPECT_EQ(j[1]["kv_bytes_per_token"], 640 * (2 * 32 + 5) / 2);
  const auto text = test::run_command(rayo() + " bench -t 2 -p 8 -n 4 -d 16 -r 1 -m " + stories(), false);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("pp8 @ d16"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("tg4 @ d16"), std::string::npos) << text.output;
  const auto bad = test::run_command(rayo() + " bench -p 0 -n 4 -d -3 -m " + stories());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("-d must not be negative"), std::string::npos) << bad.output;
}

// -B: tg of B sequences decoded together, one token each per step; t/s counts
// every sequence's tokens (as llama-batched-bench's text generation).
TEST(CliBench, BatchDecodeCountsEverySequencesTokens) {
  RAYO_REQUIRE_SHARED();
  const auto r = test::run_command(rayo() + " bench -t 2 -p 0 -n 4 -B 1,3 -r 2 --json -m " + stories(), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j.size(), 2u) << r.output;
  EXPECT_EQ(j[0]["n_seqs"], 1);
  EXPECT_EQ(j[1]["n_seqs"], 3);
  // tokens/s = B x n_gen / seconds, for every sample.
  for (const auto& t : j) {
    ASSERT_EQ(t["samples_ns"].size(), 2u);
    for (size_t i = 0; i < 2; ++i)
      EXPECT_NEAR(t["samples_ts"][i].get<double>(),
                  t["n_seqs"].get<double>() * 4 / (t["samples_ns"][i].get<double>() * 1e-9),
                  1e-6 * t["samples_ts"][i].get<double>());
  }
  const auto bad = test::run_command(rayo() + " bench -p 0 -n 4 -B 0 -m " + stories());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("-B takes batch sizes from 1 to 1024"), std::string::npos) << bad.output;
}

// --kernels' options are checked before a GPU is looked for, so these fail
// alike with and without one.
TEST(CliBench, KernelPathsAreCheckedWithOneLine) {
  const auto path = test::run_command(rayo() + " bench --kernels --kernel-path fast");
  EXPECT_NE(path.exit_code, 0);
  EXPECT_NE(path.output.find("--kernel-path must be auto, gemv, gemm, int8, exact, both, all or dense, got 'fast'"), std::string::npos)
      << path.output;
  const auto f16 = test::run_command(rayo() + " bench --kernels --kernel-path gemm --types q4_k,f16");
  EXPECT_NE(f16.exit_code, 0);
  EXPECT_NE(f16.output.find("--kernel-path gemm: no tensor-core GEMM multiplies f16 weights"), std::string::npos)
      << f16.output;
  const auto exact = test::run_command(rayo() + " bench --kernels --kernel-path exact --types bf16");
  EXPECT_NE(exact.exit_code, 0);
  EXPECT_NE(exact.output.find("--kernel-path exact: no tensor-core GEMM multiplies bf16 weights"), std::string::npos)
      << exact.output;
  const auto dense = test::run_command(rayo() + " bench --kernels --kernel-path dense --types f32");
  EXPECT_NE(dense.exit_code, 0);
  EXPECT_NE(dense.output.find("--kernel-path dense: no tensor-core GEMM multiplies f32 weights"), std::string::npos)
      << dense.output;
}

TEST(CliRun, StopStringEndsGeneration) {
  RAYO_REQUIRE_SHARED();
  const auto r = test::run_command(
      rayo() + " run -t 2 --temp 0 -n 40 --json --stop Lily -p 'Once upon a time' -m " + stories(), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["text"], ", there was a little girl named ");
  EXPECT_EQ(j["finish_reason"], "stop");
}

// --device cuda gives the same answer wherever it runs: on the GPU when one is
// usable, else on the CPU after one line saying why.
TEST(CliRun, DeviceCudaFallsBackToTheCpuWithOneLine) {
  RAYO_REQUIRE_SHARED();
  const auto r = test::run_command(rayo() + " run -t 2 --temp 0 -n 8 --device cuda -p 'Once upon a time' -m " +
                                   stories());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(", there was a little girl"), std::string::npos) << r.output;
  const bool fell_back = r.output.find("running on the CPU") != std::string::npos;
  if (fell_back) {
    EXPECT_NE(r.output.find("rayo: CUDA unavailable"), std::string::npos) << r.output;
  }
}

struct BadInput {
  const char* args;
  const char* message;
};

class CliRunBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliRunBadInput, FailsWithOneClearLine) {
  RAYO_REQUIRE_SHARED();
  const auto r = test::run_command(rayo() + " run -m " + stories() + " " + GetParam().args);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_LT(r.exit_code, 128) << "crashed: " << r.output;
  EXPECT_NE(r.output.find(GetParam().message), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CliRunBadInput,
    ::testing::Values(BadInput{"-p ''", "the prompt is empty"}, BadInput{"-p hi -n -5", "-n must be -1"},
                      BadInput{"-p hi -c -1", "-c must be 0"}, BadInput{"-p hi -t 1000", "thread count must be"},
                      BadInput{"-p hi -t -2", "-t must be a positive"},
                      BadInput{"-p hi --top-p 2", "--top-p must be between 0 and 1"},
                      BadInput{"-p hi --kv-type q4", "--kv-type must be f16 or f32"},
                      BadInput{"-p hi --device gpu", "--device must be auto, cpu or cuda"},
                      BadInput{"-p 'Once upon a time there was a cat' -c 4", "does not fit the context of 4"},
                      BadInput{"-f /nonexistent/prompt.txt", "cannot read the prompt file"}));

TEST(CliRun, RefusesFilesThatAreNotModels) {
  RAYO_REQUIRE_SHARED();
  const auto r = test::run_command(rayo() + " run -p hi -m " + test::shared_path("texts/moores-law.txt").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("rayo: error: "), std::string::npos) << r.output;
  const auto vocab = test::run_command(rayo() + " run -p hi -m " +
                                       test::shared_path("vocab/ggml-vocab-llama-spm.gguf").string());
  EXPECT_EQ(vocab.exit_code, 1) << vocab.output;
  EXPECT_NE(vocab.output.find("rayo: error: "), std::string::npos) << vocab.output;
}

}  // namespace
}  // namespace rayo
