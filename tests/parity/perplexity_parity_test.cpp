// `rayo perplexity -c 128` on shared/texts/moores-law.txt must agree with
// llama-perplexity's final estimate (shared/reference/*.perplexity-c128.txt)
// within 0.5%.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "support/paths.h"

namespace rayo {
namespace {

double final_estimate(const std::string& text) {
  std::smatch m;
  static const std::regex re("Final estimate: PPL = ([0-9.]+)");
  if (!std::regex_search(text, m, re)) return -1;
  return std::stod(m[1]);
}

class PerplexityParity : public ::testing::TestWithParam<std::string> {};

TEST_P(PerplexityParity, MatchesLlamaCpp) {
  RAYO_REQUIRE_SHARED();
  const std::string name = GetParam();
  std::ifstream ref(test::shared_path("reference/" + name + ".perplexity-c128.txt"));
  std::stringstream ss;
  ss << ref.rdbuf();
  const double expected = final_estimate(ss.str());
  ASSERT_GT(expected, 0) << "no final estimate in the reference";
  const auto r = test::run_command(test::rayo_binary().string() + " perplexity -t 2 -c 128 -m " +
                                   test::shared_path("models/" + name + ".gguf").string() + " -f " +
                                   test::shared_path("texts/moores-law.txt").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double got = final_estimate(r.output);
  ASSERT_GT(got, 0) << r.output;
  EXPECT_NEAR(got / expected, 1.0, 0.005) << "rayo " << got << ", llama.cpp " << expected;
  std::printf("[ ppl      ] %-22s rayo %.4f  llama.cpp %.4f  (%+.4f%%)\n", name.c_str(), got, expected,
              100.0 * (got / expected - 1.0));
}

INSTANTIATE_TEST_SUITE_P(SharedModels, PerplexityParity,
                         ::testing::Values("stories260K", "synth-llama-q4_k_m", "synth-qwen2-q4_k_m"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace rayo
