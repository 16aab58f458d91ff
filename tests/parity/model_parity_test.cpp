// Model parity with llama.cpp: teacher-forced logits on the recorded tokens,
// and greedy continuations, for every shared model (shared/reference) and for
// the real model the set-up fetches (tests/data/smollm2/), on plain-text
// prompts and on conversations rendered with its chat template.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "runtime/sampler.h"
#include "runtime/session.h"
#include "support/paths.h"
#include "support/real_model.h"
#include "support/reference.h"
#include "support/synth_models.h"

namespace rayo {
namespace {

double log_sum_exp(std::span<const float> logits) {
  const double m = *std::max_element(logits.begin(), logits.end());
  double s = 0;
  for (float l : logits) s += std::exp(l - m);
  return m + std::log(s);
}

runtime::SessionOptions options_for(const test::ReferenceCase& c) {
  runtime::SessionOptions opts;
  opts.n_ctx = static_cast<int64_t>(c.tokens.size() + c.greedy.size() + 8);
  opts.backend.n_threads = 2;
  return opts;
}

class ModelParity : public ::testing::TestWithParam<test::ReferenceModel> {
 protected:
  void SetUp() override {
    if (!GetParam().absent.empty()) GTEST_SKIP() << GetParam().absent;
    ref_ = test::load_reference(GetParam().reference.string());
    dir_ = GetParam().model_dir;
    if (!GetParam().synth_args.empty()) {
      dir_ = scratch_ = test::temp_dir(GetParam().name);
      std::string error;
      ASSERT_TRUE(test::make_synth_model(GetParam().synth_args, dir_, ref_.model, &error)) << error;
    }
  }
  void TearDown() override {
    if (!scratch_.empty()) std::filesystem::remove_all(scratch_);
  }
  std::shared_ptr<const runtime::Model> load_model() const { return runtime::Model::load((dir_ / ref_.model).string()); }

  test::Reference ref_;
  std::filesystem::path dir_, scratch_;
};

// Where a model has an exact reference (ReferenceModel::exact): over every
// position's lse and the tokens in both llama.cpp's and the exact top lists,
// rayo's distance from the exact logits is at most llama.cpp's, on average and
// at the worst (with a margin for two engines' independent roundings); and
// rayo's argmax is llama.cpp's wherever llama.cpp's top-1/top-2 margin is more
// than twice its own worst distance from the exact logits.
void expect_as_close_to_exact_as_llama_cpp(const std::string& name, const test::Reference& ref,
                                           const test::Reference& exact,
                                           const std::shared_ptr<const runtime::Model>& model) {
  ASSERT_EQ(exact.cases.size(), ref.cases.size());
  double rayo_sum = 0, llama_sum = 0, rayo_max = 0, llama_max = 0;
  size_t n = 0;
  std::vector<std::vector<float>> all_logits;
  for (const auto& c : ref.cases) {
    runtime::Session session(model, options_for(c));
    all_logits.push_back(session.eval_all(c.tokens));
  }
  auto compare = [&](double rayo, double llama, double exact_value) {
    const double r = std::abs(rayo - exact_value), l = std::abs(llama - exact_value);
    rayo_sum += r;
    llama_sum += l;
    rayo_max = std::max(rayo_max, r);
    llama_max = std::max(llama_max, l);
    ++n;
  };
  const int64_t n_vocab = model->spec().n_vocab;
  for (size_t k = 0; k < ref.cases.size(); ++k) {
    const auto& c = ref.cases[k];
    ASSERT_EQ(exact.cases[k].tokens, c.tokens) << "the exact reference has other prompts";
    for (size_t t = 0; t < c.tokens.size(); ++t) {
      std::span<const float> row(all_logits[k].data() + t * n_vocab, n_vocab);
      const auto& q = c.prompt_logits[t];
      const auto& e = exact.cases[k].prompt_logits[t];
      compare(log_sum_exp(row), q.lse, e.lse);
      for (const auto& [token, value] : q.top)
        for (const auto& [exact_token, exact_value] : e.top)
          if (token == exact_token) compare(row[token], value, exact_value);
    }
  }
  ASSERT_GT(n, 0u);
  std::printf("[ parity   ] %-24s distance from the exact logits over %zu: rayo mean %.4f max %.4f, llama.cpp mean %.4f "
              "max %.4f\n", name.c_str(), n, rayo_sum / n, rayo_max, llama_sum / n, llama_max);
  EXPECT_LE(rayo_sum, 1.25 * llama_sum) << name << ": rayo is farther from the exact logits than llama.cpp on average";
  EXPECT_LE(rayo_max, 1.5 * llama_max) << name << ": rayo's worst logit is farther from exact than llama.cpp's";
  for (size_t k = 0; k < ref.cases.size(); ++k)
    for (size_t t = 0; t < ref.cases[k].tokens.size(); ++t) {
      const auto& top = ref.cases[k].prompt_logits[t].top;
      if (top.size() < 2 || top[0].second - top[1].second <= 2 * llama_max) continue;
      std::span<const float> row(all_logits[k].data() + t * n_vocab, n_vocab);
      EXPECT_EQ(runtime::argmax(row), top[0].first) << name << " case " << k << " position " << t << ": argmax";
    }
}

// Runs every case teacher-forced and checks lse, the recorded top logits, and
// the argmax wherever llama.cpp's own top-1/top-2 margin exceeds the tolerance.
TEST_P(ModelParity, TeacherForcedLogits) {
  const std::string& name = GetParam().name;
  const auto& ref = ref_;
  const double tol = test::logit_tolerance(name);
  auto model = load_model();
  if (!GetParam().exact.empty()) {
    expect_as_close_to_exact_as_llama_cpp(name, ref, test::load_reference(GetParam().exact.string()), model);
    return;
  }
  double max_diff = 0, sum_diff = 0;
  size_t n_diff = 0;
  for (const auto& c : ref.cases) {
    runtime::Session session(model, options_for(c));
    const auto logits = session.eval_all(c.tokens);
    const int64_t n_vocab = session.n_vocab();
    ASSERT_EQ(n_vocab, ref.n_vocab);
    ASSERT_EQ(c.prompt_logits.size(), c.tokens.size());
    for (size_t t = 0; t < c.tokens.size(); ++t) {
      std::span<const float> row(logits.data() + t * n_vocab, n_vocab);
      const auto& expected = c.prompt_logits[t];
      const double lse_diff = std::abs(log_sum_exp(row) - expected.lse);
      EXPECT_LE(lse_diff, tol) << name << " '" << c.prompt << "' position " << t << ": lse";
      max_diff = std::max(max_diff, lse_diff);
      sum_diff += lse_diff;
      ++n_diff;
      for (const auto& [token, value] : expected.top) {
        const double d = std::abs(row[token] - value);
        max_diff = std::max(max_diff, d);
        sum_diff += d;
        ++n_diff;
        EXPECT_LE(d, tol) << name << " '" << c.prompt << "' position " << t << " token " << token;
      }
      if (expected.top.size() >= 2 && expected.top[0].second - expected.top[1].second > tol) {
        EXPECT_EQ(runtime::argmax(row), expected.top[0].first) << name << " position " << t << ": argmax";
      }
    }
  }
  std::printf("[ parity   ] %-24s max |diff| %.4f  mean |diff| %.4f over %zu logits (tolerance %.2f)\n", name.c_str(),
              max_diff, sum_diff / std::max<size_t>(n_diff, 1), n_diff, tol);
}

// Greedy decoding must follow llama.cpp's continuation up to the first step where
// llama.cpp's own top-1/top-2 margin is below the tolerance (there the two may
// legitimately part).
TEST_P(ModelParity, GreedyContinuation) {
  const std::string& name = GetParam().name;
  const auto& ref = ref_;
  const double tol = test::logit_tolerance(name);
  auto model = load_model();
  for (size_t k = 0; k < ref.cases.size(); ++k) {
    const auto& c = ref.cases[k];
    runtime::Session session(model, options_for(c));
    auto logits = session.eval(c.tokens);
    // Decode all 48 steps greedily; assert agreement up to the first near-tie,
    // and report how long the identical prefix really is.
    const size_t checkable = test::greedy_steps_before_near_tie(c, tol);
    size_t identical = 0;
    bool diverged = false;
    for (size_t i = 0; i < c.greedy.size(); ++i) {
      const int32_t token = runtime::argmax(logits);
      if (i < checkable && !diverged) {
        EXPECT_EQ(token, c.greedy[i]) << name << " '" << c.prompt << "' greedy step " << i;
      }
      if (token != c.greedy[i]) diverged = true;
      if (!diverged) ++identical;
      if (diverged && i >= checkable) break;
      if (i + 1 < c.greedy.size() && session.n_past() < session.n_ctx())
        logits = session.eval(std::span<const int32_t>(&token, 1));
    }
    std::string label = c.prompt.substr(0, 20);
    std::replace(label.begin(), label.end(), '\n', ' ');
    std::printf("[ greedy   ] %-24s case %zu '%s': %zu of %zu identical (first near-tie at step %zu)\n", name.c_str(),
                k, label.c_str(), identical, c.greedy.size(), checkable);
  }
}

// The emulated-GPU tests make the Gemma 3 models in memory from models.txt's
// arguments (support/synth_models.h): the same bytes as `rayo synth` writes.
TEST(Gemma3Models, TheCommandAndTheTestsMakeTheSameBytes) {
  for (const auto& m : test::gemma3_synth_models()) {
    const auto dir = test::temp_dir(m.name + "-bytes");
    std::string error;
    ASSERT_TRUE(test::make_synth_model(m.args, dir, "m.gguf", &error)) << error;
    std::ifstream in(dir / "m.gguf", std::ios::binary);
    const std::vector<uint8_t> written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(written == tools::synth_model_bytes(m.config, m.type, m.seed)) << m.name << ": " << m.args;
    std::filesystem::remove_all(dir);
  }
}

std::string test_name(const ::testing::TestParamInfo<test::ReferenceModel>& info) {
  std::string n = info.param.name;
  for (auto& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

// Without the shared test data there is no shared reference model: that suite
// is then empty (the data's absence is reported by the tests that skip on it).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ModelParity);
INSTANTIATE_TEST_SUITE_P(SharedModels, ModelParity, ::testing::ValuesIn(test::shared_reference_models()), test_name);
// The real model's cases are always listed and skip, saying why, when it was not fetched.
INSTANTIATE_TEST_SUITE_P(RealModel, ModelParity, ::testing::ValuesIn(test::real_reference_models()), test_name);
// Gemma 3 (sliding windows, post-norms, GeGLU, both rope bases) on synthetic
// models made by `rayo synth` and llama.cpp's references for them.
INSTANTIATE_TEST_SUITE_P(Gemma3, ModelParity, ::testing::ValuesIn(test::gemma3_reference_models()), test_name);

}  // namespace
}  // namespace rayo
