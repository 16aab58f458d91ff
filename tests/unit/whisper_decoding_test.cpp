// Decoding one window (whisper/decoding.h) through a scripted WhisperRunner
// whose logits each test designs: token suppression, blank suppression at the
// first step, the no-speech probability at <|startoftranscript|>, the timestamp
// rules, greedy and beam search (ordering, patience, length penalty), sampling
// with best_of, and the maximum length. Each case is built so that the rule
// it checks, done wrong, picks another token.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

#include "common/error.h"
#include "whisper/decoding.h"

namespace rayo::whisper {
namespace {

// A small vocabulary laid out as Whisper's: text tokens 0..19 (0 is the blank),
// the specials, then 12 timestamps <|0.00|>..<|0.22|>.
constexpr int32_t kEot = 20, kSot = 21, kSotPrev = 25, kNoSpeech = 26, kNoTimestamps = 27, kTs = 28;
constexpr int32_t kVocab = 40;

WhisperSpec small_spec() {
  WhisperSpec s;
  s.n_vocab = kVocab;
  s.n_text_ctx = 448;
  s.eot = kEot;
  s.sot = kSot;
  s.translate = 22;
  s.transcribe = 23;
  s.sot_lm = 24;
  s.sot_prev = kSotPrev;
  s.no_speech = kNoSpeech;
  s.no_timestamps = kNoTimestamps;
  s.timestamp_begin = kTs;
  s.suppress_ids = {5};
  s.suppress_ids_begin = {0, kEot};
  return s;
}

// Logits giving the listed tokens these probabilities and the others almost none.
std::vector<float> probs(const std::map<int32_t, double>& p) {
  std::vector<float> row(kVocab, -30.0f);
  for (const auto& [id, prob] : p) row[id] = static_cast<float>(std::log(prob));
  return row;
}

// Answers each sequence with the logits a test's script gives for it, and records the calls.
class ScriptedRunner : public WhisperRunner {
 public:
  using Script = std::function<std::vector<float>(const std::vector<int32_t>& sequence)>;
  explicit ScriptedRunner(Script script) : script_(std::move(script)) {}

  const WhisperSpec& spec() const override { return spec_; }
  void encode(std::span<const float>) override {}
  void decode(std::span<const std::vector<int32_t>> sequences, std::vector<float>& logits, int32_t extra_position,
              std::vector<float>* extra_logits) override {
    calls.push_back({std::vector<std::vector<int32_t>>(sequences.begin(), sequences.end()), extra_position});
    logits.clear();
    for (const auto& s : sequences) {
      EXPECT_LE(s.size(), spec_.n_text_ctx);
      const auto row = script_(s);
      logits.insert(logits.end(), row.begin(), row.end());
    }
    if (extra_position >= 0) {
      const std::vector<int32_t> head(sequences[0].begin(), sequences[0].begin() + extra_position + 1);
      *extra_logits = script_(head);
    }
  }

  struct Call {
    std::vector<std::vector<int32_t>> sequences;
    int32_t extra_position;
  };
  std::vector<Call> calls;

 private:
  WhisperSpec spec_ = small_spec();
  Script script_;
};

// A script keyed by the tokens generated after a prompt of prompt_size tokens;
// sequences it does not list end the text.
ScriptedRunner::Script after_prompt(size_t prompt_size, std::map<std::vector<int32_t>, std::map<int32_t, double>> table) {
  return [prompt_size, table](const std::vector<int32_t>& sequence) {
    if (sequence.size() < prompt_size) return probs({{kEot, 1.0}});
    const std::vector<int32_t> generated(sequence.begin() + static_cast<std::ptrdiff_t>(prompt_size), sequence.end());
    const auto it = table.find(generated);
    return probs(it == table.end() ? std::map<int32_t, double>{{kEot, 1.0}} : it->second);
  };
}

const std::vector<int32_t> kNoTimestampsPrompt = {kSot, kNoTimestamps};

DecodeOptions greedy() {
  DecodeOptions o;
  o.beam_size = 1;
  return o;
}

DecodeResult run(ScriptedRunner& runner, const std::vector<int32_t>& prompt, const DecodeOptions& o, uint64_t seed = 0) {
  std::mt19937_64 rng(seed);
  return decode_window(runner, prompt, o, rng);
}

TEST(WhisperDecoding, GreedyTakesTheLikeliestTokensUntilEndOfText) {
  ScriptedRunner runner(after_prompt(2, {{{}, {{1, 0.6}, {2, 0.4}}}, {{1}, {{3, 0.7}, {4, 0.3}}}, {{1, 3}, {{kEot, 0.8}, {6, 0.2}}}}));
  const auto r = run(runner, kNoTimestampsPrompt, greedy());
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{1, 3}));
  const double sum = std::log(0.6) + std::log(0.7) + std::log(0.8);
  EXPECT_NEAR(r.sum_logprob, sum, 1e-5);
  EXPECT_NEAR(r.score, sum / 2, 1e-5);        // CTranslate2: / length^1
  EXPECT_NEAR(r.avg_logprob, sum / 3, 1e-5);  // faster-whisper: / (length + 1)
  ASSERT_EQ(runner.calls.size(), 3u);
  EXPECT_EQ(runner.calls[0].sequences, (std::vector<std::vector<int32_t>>{kNoTimestampsPrompt}));
  EXPECT_EQ(runner.calls[2].sequences, (std::vector<std::vector<int32_t>>{{kSot, kNoTimestamps, 1, 3}}));
}

TEST(WhisperDecoding, SuppressedTokensAreNeverGenerated) {
  const auto script = after_prompt(2, {{{}, {{5, 0.6}, {1, 0.4}}}});
  auto o = greedy();
  ScriptedRunner a(script);
  EXPECT_EQ(run(a, kNoTimestampsPrompt, o).tokens, (std::vector<int32_t>{1}));  // -1: config.json's {5}
  o.suppress_tokens = {};
  ScriptedRunner b(script);
  EXPECT_EQ(run(b, kNoTimestampsPrompt, o).tokens, (std::vector<int32_t>{5}));
  o.suppress_tokens = {1};
  ScriptedRunner c(script);
  EXPECT_EQ(run(c, kNoTimestampsPrompt, o).tokens, (std::vector<int32_t>{5}));
}

TEST(WhisperDecoding, BlankAndEndOfTextAreSuppressedAtTheFirstStepOnly) {
  const auto script = after_prompt(2, {{{}, {{0, 0.5}, {kEot, 0.3}, {2, 0.2}}}, {{2}, {{0, 0.9}, {kEot, 0.1}}}});
  auto o = greedy();
  ScriptedRunner a(script);
  EXPECT_EQ(run(a, kNoTimestampsPrompt, o).tokens, (std::vector<int32_t>{2, 0}));
  o.suppress_blank = false;
  ScriptedRunner b(script);
  EXPECT_EQ(run(b, kNoTimestampsPrompt, o).tokens, (std::vector<int32_t>{0}));
}

TEST(WhisperDecoding, NoSpeechProbabilityIsReadAtTheStartOfTranscript) {
  // Previous text before <|startoftranscript|>: the runner is asked for the logits at its position.
  const std::vector<int32_t> prompt = {kSotPrev, 7, kSot, kNoTimestamps};
  ScriptedRunner a([](const std::vector<int32_t>& s) {
    if (s.back() == kSot) return probs({{kNoSpeech, 0.25}, {1, 0.75}});
    if (s.back() == kNoTimestamps) return probs({{kNoSpeech, 0.9}, {1, 0.1}});
    return probs({{kEot, 1.0}});
  });
  auto o = greedy();
  o.suppress_tokens = {5, kNoSpeech};  // as transcribe() suppresses it
  const auto r = run(a, prompt, o);
  EXPECT_EQ(a.calls[0].extra_position, 2);
  EXPECT_NEAR(r.no_speech_prob, 0.25, 1e-6);  // not the 0.9 after <|notimestamps|>
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{1}));

  // <|startoftranscript|> last: the first step's own logits hold it.
  ScriptedRunner b([](const std::vector<int32_t>& s) {
    if (s.back() == kSot) return probs({{kNoSpeech, 0.4}, {kTs, 0.6}});
    return probs({{kEot, 1.0}});
  });
  const auto rb = run(b, {kSot}, greedy());
  EXPECT_EQ(b.calls[0].extra_position, -1);
  EXPECT_NEAR(rb.no_speech_prob, 0.4, 1e-6);
}

// The rules on one row of logits, by the tokens generated before it.
struct RulesCase {
  WhisperSpec spec = small_spec();
  DecodeOptions options;
  std::vector<float> row(std::vector<int32_t> generated, std::vector<float> logits = std::vector<float>(kVocab, 0.0f),
                         bool timestamps = true) const {
    StepRules rules(spec, options, timestamps, kVocab);
    rules.apply(logits, generated);
    return logits;
  }
};
bool disabled(float v) { return v == std::numeric_limits<float>::lowest(); }

TEST(WhisperDecoding, TimestampRulesAtTheFirstStep) {
  RulesCase c;
  c.options.max_initial_timestamp = 0.04;  // <|0.04|>, two steps
  const auto row = c.row({});
  for (int32_t id = 0; id < kTs; ++id) EXPECT_TRUE(disabled(row[id])) << id;  // text, <|endoftext|>, specials
  for (int32_t id = kTs; id <= kTs + 2; ++id) EXPECT_FALSE(disabled(row[id])) << id;
  for (int32_t id = kTs + 3; id < kVocab; ++id) EXPECT_TRUE(disabled(row[id])) << id;
  // Without timestamps only the suppressed tokens go.
  const auto plain = c.row({}, std::vector<float>(kVocab, 0.0f), false);
  EXPECT_FALSE(disabled(plain[1]));
  EXPECT_FALSE(disabled(plain[kTs + 5]));
  EXPECT_TRUE(disabled(plain[5]));
  EXPECT_TRUE(disabled(plain[0]));  // blank, first step
}

TEST(WhisperDecoding, TimestampsComeInPairsAndNeverDecrease) {
  RulesCase c;
  // After the opening timestamp alone: text (it counts as a closed pair).
  auto row = c.row({kTs + 1});
  EXPECT_FALSE(disabled(row[1]));
  for (int32_t id = kTs; id < kVocab; ++id) EXPECT_TRUE(disabled(row[id])) << id;
  EXPECT_TRUE(disabled(row[kNoTimestamps]));
  EXPECT_FALSE(disabled(row[0]));  // the blank is allowed after the first step

  // After text, with timestamps unlikely: text, or a timestamp not before the last.
  std::vector<float> unlikely(kVocab, -8.0f);
  unlikely[1] = 0.0f;
  row = c.row({kTs + 3, 1}, unlikely);
  EXPECT_FALSE(disabled(row[2]));
  EXPECT_FALSE(disabled(row[kEot]));
  for (int32_t id = kTs; id < kTs + 3; ++id) EXPECT_TRUE(disabled(row[id])) << id;
  for (int32_t id = kTs + 3; id < kVocab; ++id) EXPECT_FALSE(disabled(row[id])) << id;

  // A lone closing timestamp: another timestamp (not earlier) or the end, no text.
  std::vector<float> end_likely(kVocab, 0.0f);
  end_likely[kEot] = 5.0f;  // likelier than the timestamps together, so none is forced
  row = c.row({kTs, 1, kTs + 4}, end_likely);
  for (int32_t id = 0; id < kEot; ++id) EXPECT_TRUE(disabled(row[id])) << id;
  EXPECT_FALSE(disabled(row[kEot]));
  EXPECT_TRUE(disabled(row[kTs + 3]));
  EXPECT_FALSE(disabled(row[kTs + 4]));
  EXPECT_FALSE(disabled(row[kTs + 9]));

  // A closed pair: text.
  row = c.row({kTs, 1, kTs + 4, kTs + 4});
  EXPECT_FALSE(disabled(row[1]));
  for (int32_t id = kTs; id < kVocab; ++id) EXPECT_TRUE(disabled(row[id])) << id;
}

TEST(WhisperDecoding, TimestampsTogetherLikelierThanAnyTextForceATimestamp) {
  RulesCase c;
  // 12 timestamps at -1 against a text token at 0: log(12 e^-1) = 1.48 > 0.
  std::vector<float> logits(kVocab, -20.0f);
  logits[1] = 0.0f;
  for (int32_t id = kTs; id < kVocab; ++id) logits[id] = -1.0f;
  auto row = c.row({kTs, 1}, logits);
  for (int32_t id = 0; id < kTs; ++id) EXPECT_TRUE(disabled(row[id])) << id;
  // At -5 each they are not (log 12 - 5 < 0): text stays.
  for (int32_t id = kTs; id < kVocab; ++id) logits[id] = -5.0f;
  row = c.row({kTs, 1}, logits);
  EXPECT_FALSE(disabled(row[1]));
}

TEST(WhisperDecoding, TheFirstTimestampIsForcedAndLimitedByMaxInitialTimestamp) {
  // The model would rather say text, and then a late timestamp.
  ScriptedRunner runner(after_prompt(1, {{{}, {{1, 0.9}, {kTs + 1, 0.04}, {kTs + 7, 0.06}}},
                                         {{kTs + 1}, {{kTs + 2, 0.6}, {2, 0.4}}},
                                         {{kTs + 1, 2}, {{kTs + 5, 0.7}, {kEot, 0.3}}},
                                         {{kTs + 1, 2, kTs + 5}, {{kEot, 1.0}}}}));
  auto o = greedy();
  o.max_initial_timestamp = 0.04;
  const auto r = run(runner, {kSot}, o);
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{kTs + 1, 2, kTs + 5}));
}

// Greedy takes a (0.5) then c; beam search finds b, whose text ends at once.
ScriptedRunner::Script beam_beats_greedy() {
  return after_prompt(2, {{{}, {{1, 0.5}, {2, 0.4}, {4, 0.1}}},
                          {{1}, {{3, 0.3}, {6, 0.25}, {7, 0.25}, {kEot, 0.2}}},
                          {{1, 3}, {{kEot, 0.9}, {8, 0.1}}},
                          {{2}, {{kEot, 0.99}, {9, 0.01}}}});
}

TEST(WhisperDecoding, BeamSearchFindsTheBestNormalizedHypothesis) {
  ScriptedRunner g(beam_beats_greedy());
  EXPECT_EQ(run(g, kNoTimestampsPrompt, greedy()).tokens, (std::vector<int32_t>{1, 3}));
  DecodeOptions o;
  o.beam_size = 2;
  ScriptedRunner b(beam_beats_greedy());
  const auto r = run(b, kNoTimestampsPrompt, o);
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{2}));
  EXPECT_NEAR(r.sum_logprob, std::log(0.4) + std::log(0.99), 1e-5);
  // The first step expands one beam; later steps decode both beams together.
  EXPECT_EQ(b.calls[0].sequences.size(), 1u);
  EXPECT_EQ(b.calls[1].sequences.size(), 2u);
}

// b ends first (score -0.97); a c ends a step later with a better score (-0.70).
ScriptedRunner::Script patience_script() {
  return after_prompt(2, {{{}, {{1, 0.55}, {2, 0.4}, {4, 0.05}}},
                          {{1}, {{3, 0.45}, {6, 0.3}, {kEot, 0.25}}},
                          {{1, 3}, {{kEot, 0.99}, {8, 0.01}}},
                          {{2}, {{kEot, 0.95}, {9, 0.05}}}});
}

TEST(WhisperDecoding, PatienceDecidesHowManyFinishedHypothesesEndTheSearch) {
  DecodeOptions o;
  o.beam_size = 2;
  ScriptedRunner full(patience_script());
  EXPECT_EQ(run(full, kNoTimestampsPrompt, o).tokens, (std::vector<int32_t>{1, 3}));  // waits for 2 hypotheses
  o.patience = 0.5f;  // round(2 x 0.5) = 1: the first finished hypothesis ends it
  ScriptedRunner impatient(patience_script());
  EXPECT_EQ(run(impatient, kNoTimestampsPrompt, o).tokens, (std::vector<int32_t>{2}));
  EXPECT_EQ(impatient.calls.size(), 2u);
}

TEST(WhisperDecoding, LengthPenaltyRanksHypotheses) {
  DecodeOptions o;
  o.beam_size = 2;
  o.length_penalty = 0.0f;  // raw sums: the short b wins, and the search stops when the top beam ends
  ScriptedRunner runner(patience_script());
  const auto r = run(runner, kNoTimestampsPrompt, o);
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{2}));
  EXPECT_NEAR(r.score, r.sum_logprob, 1e-9);
  EXPECT_EQ(runner.calls.size(), 2u);
}

// a then the end (-0.69), or b and a long tail of unlikely tokens (below -1.6 a token).
ScriptedRunner::Script sampling_script() {
  return [](const std::vector<int32_t>& s) {
    if (s.size() <= 2) return probs({{1, 0.5}, {2, 0.5}});  // the prompt (and the no-speech row's prefix)
    if (s[2] == 1) return probs({{kEot, 1.0}});
    return probs({{kEot, 0.2}, {3, 0.2}, {4, 0.2}, {6, 0.2}, {7, 0.2}});
  };
}

TEST(WhisperDecoding, SamplingKeepsTheBestOfItsCandidates) {
  DecodeOptions o;
  o.temperature = 1.0f;
  int single_b = 0, best_of_a = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    o.best_of = 1;
    ScriptedRunner one(sampling_script());
    single_b += run(one, kNoTimestampsPrompt, o, seed).tokens.front() == 2;
    o.best_of = 5;
    ScriptedRunner five(sampling_script());
    const auto r = run(five, kNoTimestampsPrompt, o, seed);
    best_of_a += r.tokens == std::vector<int32_t>{1};
    EXPECT_EQ(five.calls[0].sequences.size(), 1u);  // the first step is shared
  }
  EXPECT_GE(single_b, 4);  // half the time, give or take
  EXPECT_LE(single_b, 16);
  EXPECT_GE(best_of_a, 17);  // all five on b is 1 in 32
}

TEST(WhisperDecoding, SamplingIsReproducibleAndColdSamplingIsGreedy) {
  DecodeOptions o;
  o.temperature = 1.0f;
  o.best_of = 3;
  ScriptedRunner a(sampling_script()), b(sampling_script());
  const auto ra = run(a, kNoTimestampsPrompt, o, 42), rb = run(b, kNoTimestampsPrompt, o, 42);
  EXPECT_EQ(ra.tokens, rb.tokens);
  EXPECT_EQ(ra.sum_logprob, rb.sum_logprob);
  o.temperature = 0.01f;
  o.best_of = 1;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    ScriptedRunner r(after_prompt(2, {{{}, {{1, 0.6}, {2, 0.4}}}}));
    EXPECT_EQ(run(r, kNoTimestampsPrompt, o, seed).tokens, (std::vector<int32_t>{1}));
  }
}

TEST(WhisperDecoding, GeneratesAtMostHalfTheContextOrWhatThePromptLeaves) {
  const auto never_ends = [](const std::vector<int32_t>&) { return probs({{1, 1.0}}); };
  ScriptedRunner a(never_ends);
  EXPECT_EQ(run(a, kNoTimestampsPrompt, greedy()).tokens.size(), 224u);  // min(448 / 2, 448 - 1)
  // 300 prompt tokens: 448 - 299 = 149 left; the longest sequence is exactly 448.
  std::vector<int32_t> prompt = {kSotPrev};
  prompt.insert(prompt.end(), 297, 3);
  prompt.push_back(kSot);
  prompt.push_back(kNoTimestamps);
  ScriptedRunner b(never_ends);
  EXPECT_EQ(run(b, prompt, greedy()).tokens.size(), 149u);
  EXPECT_EQ(b.calls.back().sequences[0].size(), 448u);
  // Beam search stops at the same length.
  DecodeOptions o;
  o.beam_size = 2;
  ScriptedRunner c(never_ends);
  EXPECT_EQ(run(c, prompt, o).tokens.size(), 149u);
}

TEST(WhisperDecoding, MalformedPromptsAreRefused) {
  ScriptedRunner runner([](const std::vector<int32_t>&) { return probs({{kEot, 1.0}}); });
  EXPECT_THROW(run(runner, {1, 2}, greedy()), Error);               // no <|startoftranscript|>
  EXPECT_THROW(run(runner, {kSot, kNoTimestamps, 4}, greedy()), Error);  // a prefix after it
  EXPECT_THROW(run(runner, std::vector<int32_t>(449, kSot), greedy()), Error);
  auto o = greedy();
  o.beam_size = 0;
  EXPECT_THROW(run(runner, kNoTimestampsPrompt, o), Error);
}

}  // namespace
}  // namespace rayo::whisper
