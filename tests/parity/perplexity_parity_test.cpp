// `rayo perplexity -c 128` on shared/texts/moores-law.txt must agree with
// llama-perplexity's final estimate within 0.5%, on shared models
// (shared/reference/*.perplexity-c128.txt) and on the real model the set-up
// fetches (tests/data/smollm2/perplexity-c128.txt).
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <regex>
#include <sstream>

#include "support/paths.h"
#include "support/real_model.h"

namespace rayo {
namespace {

double final_estimate(const std::string& text) {
  std::smatch m;
  static const std::regex re("Final estimate: PPL = ([0-9.]+)");
  if (!std::regex_search(text, m, re)) return -1;
  return std::stod(m[1]);
}

struct PerplexityCase {
  std::string name;
  std::filesystem::path reference;  // llama-perplexity's output
  std::filesystem::path model;
  bool real = false;  // the fetched real model rather than a shared one
};

// gtest prints a parameter by its name.
void PrintTo(const PerplexityCase& c, std::ostream* os) { *os << c.name; }

PerplexityCase shared_case(const std::string& name) {
  return {name, test::shared_path("reference/" + name + ".perplexity-c128.txt"),
          test::shared_path("models/" + name + ".gguf")};
}

class PerplexityParity : public ::testing::TestWithParam<PerplexityCase> {};

TEST_P(PerplexityParity, MatchesLlamaCpp) {
  RAYO_REQUIRE_SHARED();  // the text
  if (GetParam().real) RAYO_REQUIRE_REAL_MODEL();
  const std::string& name = GetParam().name;
  std::ifstream ref(GetParam().reference);
  std::stringstream ss;
  ss << ref.rdbuf();
  const double expected = final_estimate(ss.str());
  ASSERT_GT(expected, 0) << "no final estimate in the reference";
  const auto r = test::run_command(test::rayo_binary().string() + " perplexity -t 2 -c 128 -m " +
                                   GetParam().model.string() + " -f " +
                                   test::shared_path("texts/moores-law.txt").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double got = final_estimate(r.output);
  ASSERT_GT(got, 0) << r.output;
  EXPECT_NEAR(got / expected, 1.0, 0.005) << "rayo " << got << ", llama.cpp " << expected;
  std::printf("[ ppl      ] %-22s rayo %.4f  llama.cpp %.4f  (%+.4f%%)\n", name.c_str(), got, expected,
              100.0 * (got / expected - 1.0));
}

std::string test_name(const ::testing::TestParamInfo<PerplexityCase>& info) {
  std::string n = info.param.name;
  for (auto& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(SharedModels, PerplexityParity,
                         ::testing::Values(shared_case("stories260K"), shared_case("synth-llama-q4_k_m"),
                                           shared_case("synth-qwen2-q4_k_m")),
                         test_name);
INSTANTIATE_TEST_SUITE_P(RealModel, PerplexityParity,
                         ::testing::Values(PerplexityCase{"SmolLM2-135M-Instruct-Q4_1",
                                                          test::real_model_data("perplexity-c128.txt"),
                                                          test::real_model_path(), true}),
                         test_name);

}  // namespace
}  // namespace rayo
