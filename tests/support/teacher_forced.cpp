#include "support/teacher_forced.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "support/paths.h"
#include "support/reference.h"

namespace rayo::test {
namespace {

double log_sum_exp(std::span<const float> row) {
  const double m = *std::max_element(row.begin(), row.end());
  double s = 0;
  for (float v : row) s += std::exp(v - m);
  return m + std::log(s);
}

}  // namespace

double check_teacher_forced(const std::string& name, graph::Executor& tested, int64_t max_tokens, graph::Executor& cpu,
                            const std::vector<int32_t>& table, int n_tokens, const std::filesystem::path& reference,
                            const std::vector<int32_t>& ring_start) {
  const auto ref =
      load_reference(reference.empty() ? shared_path("reference/" + name + ".json").string() : reference.string());
  const auto& c = ref.cases.at(0);
  std::vector<int32_t> tokens = c.tokens;
  tokens.insert(tokens.end(), c.greedy.begin(), c.greedy.end());
  std::vector<ReferenceLogits> expected = c.prompt_logits;
  expected.insert(expected.end(), c.greedy_logits.begin(), c.greedy_logits.end());
  n_tokens = std::min<int>(n_tokens, static_cast<int>(std::min(tokens.size(), expected.size())));
  const double tol = logit_tolerance(name);
  const int32_t max_blocks = static_cast<int32_t>(table.size());
  const std::vector<int32_t> seq(static_cast<size_t>(max_tokens), 0);
  double worst = 0;
  for (int start = 0; start < n_tokens; start += static_cast<int>(max_tokens)) {
    const int n = std::min<int>(static_cast<int>(max_tokens), n_tokens - start);
    std::vector<int32_t> toks(tokens.begin() + start, tokens.begin() + start + n), pos(n), rows(n);
    for (int i = 0; i < n; ++i) pos[i] = start + i, rows[i] = i;
    auto lt = tested.step({toks, pos, rows, std::span<const int32_t>(seq).first(n), table, max_blocks, {}, ring_start});
    const std::vector<float> logits(lt.begin(), lt.end());
    const size_t vocab = logits.size() / n;
    for (int i = 0; i < n; ++i) {
      const int p = pos[i];
      const auto row = std::span<const float>(logits).subspan(i * vocab, vocab);
      const auto& e = expected[p];
      EXPECT_LE(std::abs(log_sum_exp(row) - e.lse), tol) << name << " position " << p << ": lse";
      for (const auto& [token, value] : e.top)
        EXPECT_LE(std::abs(row[token] - value), tol) << name << " position " << p << " token " << token;
      const int64_t top = std::max_element(row.begin(), row.end()) - row.begin();
      if (e.top.size() >= 2 && e.top[0].second - e.top[1].second > tol) {
        EXPECT_EQ(top, e.top[0].first) << name << " position " << p << ": argmax";
      }
      const int32_t out = 0;
      auto lc = cpu.step(
          {{&toks[i], 1}, {&p, 1}, {&out, 1}, std::span<const int32_t>(seq).first(1), table, max_blocks, {}, ring_start});
      for (size_t k = 0; k < vocab; ++k) worst = std::max(worst, std::abs(static_cast<double>(lc[k]) - row[k]));
      EXPECT_GE(lc[top], *std::max_element(lc.begin(), lc.end()) - tol)
          << name << " position " << p << ": the argmax is no near-tie on the CPU backend";
    }
  }
  return worst;
}

}  // namespace rayo::test
