// faster-whisper's long-form loop (whisper/transcribe.h) through a scripted
// WhisperRunner that knows which window it encoded and how many times that
// window was decoded: seeking by the predicted timestamps, the previous-text
// prompt and its reset, temperature fallback on compression ratio and on mean
// log-probability, skipping silent windows, progress; and the pieces on their
// own (compression ratio, the segment split against faster-whisper's output).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "support/paths.h"
#include "support/real_model.h"
#include "whisper/transcribe.h"

namespace rayo::whisper {
namespace {

std::string special(std::string_view name) {
  std::string text = "<|";
  text += name;
  text += "|>";
  return text;
}

// tiny.en's layout: text tokens (here " w0", " w1", ...), <|endoftext|> 50256,
// <|startoftranscript|> 50257, 99 languages, the tasks, <|startofprev|> 50360,
// <|nocaptions|> 50361, <|notimestamps|> 50362, then <|0.00|> 50363 to <|30.00|> 51863.
constexpr int32_t kEot = 50256, kSot = 50257, kSotPrev = 50360, kNoSpeech = 50361, kNoTimestamps = 50362;
constexpr int32_t kTs = 50363, kVocab = 51864;
int32_t ts(double seconds) { return kTs + static_cast<int32_t>(std::lround(seconds / 0.02)); }

struct EnglishModel {
  WhisperSpec spec;
  std::vector<std::string> vocabulary;
  EnglishModel() {
    for (int i = 0; i < kEot; ++i) vocabulary.push_back("\xC4\xA0w" + std::to_string(i));  // "Ġw<i>"
    vocabulary.push_back("<|endoftext|>");
    vocabulary.push_back("<|startoftranscript|>");
    const auto& codes = WhisperTokenizer::language_codes();
    for (size_t i = 0; i < 99; ++i) vocabulary.push_back(special(codes[i]));
    for (const char* s : {"<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nocaptions|>",
                          "<|notimestamps|>"})
      vocabulary.push_back(s);
    for (int i = 0; i <= 1500; ++i) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "<|%.2f|>", i * 0.02);
      vocabulary.push_back(buf);
    }
    spec.n_mels = 80;
    spec.n_vocab = kVocab;
    spec.n_text_ctx = 448;
    spec.eot = kEot;
    spec.sot = kSot;
    spec.translate = 50357;
    spec.transcribe = 50358;
    spec.sot_lm = 50359;
    spec.sot_prev = kSotPrev;
    spec.no_speech = kNoSpeech;
    spec.no_timestamps = kNoTimestamps;
    spec.timestamp_begin = kTs;
    spec.suppress_ids = {1, 2};  // stands for the non-speech symbols
    spec.suppress_ids_begin = {220, kEot};
  }
};

const EnglishModel& english() {
  static const EnglishModel m;
  return m;
}
const WhisperTokenizer& english_tokenizer() {
  static const WhisperTokenizer t(english().spec, english().vocabulary);
  return t;
}

// Rows of logits: the listed tokens with these probabilities, the rest almost none;
// or every token alike but one a little likelier (a guess, mean log-probability far below -1).
std::vector<float> probs(const std::map<int32_t, double>& p, int32_t vocab = kVocab) {
  std::vector<float> row(vocab, -30.0f);
  for (const auto& [id, prob] : p) row[id] = static_cast<float>(std::log(prob));
  return row;
}
std::vector<float> guess(int32_t token, float strength = 3.0f) {
  std::vector<float> row(kVocab, 0.0f);
  row[token] = strength;
  return row;
}

// A clip of `frames` mel frames whose first band holds the frame number, so that
// the runner reads a window's seek from its first value.
audio::LogMel clip(int64_t content_frames) {
  audio::LogMel mel;
  mel.n_mels = 80;
  mel.n_frames = content_frames + 1;
  mel.values.assign(static_cast<size_t>(mel.n_mels * mel.n_frames), 0.0f);
  for (int64_t f = 0; f < mel.n_frames; ++f) mel.values[f] = static_cast<float>(f);
  return mel;
}

class WindowRunner : public WhisperRunner {
 public:
  // The logits after `generated` (the tokens after the prompt) in the window at
  // `seek`, on the attempt-th decoding of that window (1 = temperature 0).
  using Script = std::function<std::vector<float>(int64_t seek, int attempt, const std::vector<int32_t>& generated)>;
  explicit WindowRunner(Script script, WhisperSpec spec = english().spec)
      : spec_(std::move(spec)), script_(std::move(script)) {}

  const WhisperSpec& spec() const override { return spec_; }
  void encode(std::span<const float> mel) override {
    EXPECT_EQ(mel.size(), 80u * 3000u);
    seek_ = static_cast<int64_t>(mel[0]);
    encoded.push_back(seek_);
    attempts_[seek_] = 0;
  }
  void decode(std::span<const std::vector<int32_t>> sequences, std::vector<float>& logits, int32_t extra_position,
              std::vector<float>* extra_logits) override {
    bool first_step = true;
    for (const auto& s : sequences) first_step = first_step && generated(s).empty();
    if (first_step) {
      ++attempts_[seek_];
      prompts[seek_].push_back(sequences[0]);
    }
    logits.clear();
    for (const auto& s : sequences) {
      const auto row = script_(seek_, attempts_[seek_], generated(s));
      logits.insert(logits.end(), row.begin(), row.end());
    }
    if (extra_position >= 0) *extra_logits = script_(seek_, attempts_[seek_], {});
  }
  int attempts(int64_t seek) { return attempts_[seek]; }

  std::vector<int64_t> encoded;                                  // seeks, in order
  std::map<int64_t, std::vector<std::vector<int32_t>>> prompts;  // per window, per attempt

 private:
  std::vector<int32_t> generated(const std::vector<int32_t>& s) const {
    size_t end = static_cast<size_t>(std::find(s.begin(), s.end(), spec_.sot) - s.begin()) + 1;
    while (end < s.size() && s[end] > spec_.sot && s[end] <= spec_.no_timestamps) ++end;
    return std::vector<int32_t>(s.begin() + static_cast<std::ptrdiff_t>(std::min(end, s.size())), s.end());
  }
  WhisperSpec spec_;
  Script script_;
  int64_t seek_ = -1;
  std::map<int64_t, int> attempts_;
};

// Window 0: "<|0.00|> w1001 <|1.00|><|1.00|> w1002" (unfinished): one segment, then seek 1 s.
// Window 100: "<|0.00|> w1003 <|2.00|>": a segment from 1 s to 3 s, then seek 31 s.
// Window 3100: silence (no-speech 0.76, nothing but guesses).
// Sequences off these paths (beam search's other beams) say " w7" for a while, then end.
std::vector<float> seeking_script(int64_t seek, int, const std::vector<int32_t>& g) {
  using Table = std::map<std::vector<int32_t>, std::map<int32_t, double>>;
  auto lookup = [&](const Table& table) {
    const auto it = table.find(g);
    if (it != table.end()) return probs(it->second);
    return probs({{g.size() < 8 ? 7 : kEot, 1.0}});
  };
  if (seek == 0)
    return lookup({{{}, {{ts(0), 0.98}, {kNoSpeech, 0.02}}},
                   {{ts(0)}, {{1001, 1.0}}},
                   {{ts(0), 1001}, {{ts(1.0), 0.9}, {kEot, 0.1}}},
                   {{ts(0), 1001, ts(1.0)}, {{ts(1.0), 1.0}}},
                   {{ts(0), 1001, ts(1.0), ts(1.0)}, {{1002, 1.0}}},
                   {{ts(0), 1001, ts(1.0), ts(1.0), 1002}, {{kEot, 1.0}}}});
  if (seek == 100)
    return lookup({{{}, {{ts(0), 0.99}, {kNoSpeech, 0.01}}},
                   {{ts(0)}, {{1003, 1.0}}},
                   {{ts(0), 1003}, {{ts(2.0), 0.95}, {kEot, 0.05}}},
                   {{ts(0), 1003, ts(2.0)}, {{kEot, 1.0}}}});
  std::vector<float> row(kVocab, 0.0f);  // silence
  row[kNoSpeech] = 12.0f;
  row[kEot] = 2.0f;
  return row;
}

TranscribeOptions greedy_options() {
  TranscribeOptions o;
  o.beam_size = 1;
  return o;
}

void expect_seeking_transcript(const Transcript& t) {
  ASSERT_EQ(t.segments.size(), 2u);
  const Segment& a = t.segments[0];
  EXPECT_EQ(a.id, 1);
  EXPECT_EQ(a.seek, 0);
  EXPECT_DOUBLE_EQ(a.start, 0.0);
  EXPECT_DOUBLE_EQ(a.end, 1.0);
  EXPECT_EQ(a.text, " w1001");
  EXPECT_EQ(a.tokens, (std::vector<int32_t>{ts(0), 1001, ts(1.0)}));
  EXPECT_EQ(a.temperature, 0.0);
  EXPECT_NEAR(a.no_speech_prob, 0.02, 1e-5);
  EXPECT_GT(a.avg_logprob, -0.1);
  const Segment& b = t.segments[1];
  EXPECT_EQ(b.id, 2);
  EXPECT_EQ(b.seek, 100);
  EXPECT_DOUBLE_EQ(b.start, 1.0);
  EXPECT_DOUBLE_EQ(b.end, 3.0);
  EXPECT_EQ(b.text, " w1003");
}

TEST(WhisperTranscribe, SeeksByThePredictedTimestampsAndSkipsSilence) {
  WindowRunner runner(seeking_script);
  std::vector<std::pair<int64_t, int64_t>> progress;
  auto o = greedy_options();
  o.progress = [&](int64_t done, int64_t total) { progress.emplace_back(done, total); };
  const Transcript t = transcribe(runner, english_tokenizer(), clip(5000), o);
  expect_seeking_transcript(t);
  EXPECT_EQ(runner.encoded, (std::vector<int64_t>{0, 100, 3100}));
  // The silent window was judged silent at temperature 0: no fallback.
  EXPECT_EQ(runner.attempts(3100), 1);
  EXPECT_EQ(progress, (std::vector<std::pair<int64_t, int64_t>>{{100, 5000}, {3100, 5000}, {5000, 5000}}));
  EXPECT_EQ(t.language, "en");
  EXPECT_EQ(t.task, "transcribe");
  EXPECT_DOUBLE_EQ(t.duration, 50.0);
}

TEST(WhisperTranscribe, BeamSearchFollowsTheSameConfidentPath) {
  WindowRunner runner(seeking_script);
  TranscribeOptions o;  // beam 5, faster-whisper's default
  expect_seeking_transcript(transcribe(runner, english_tokenizer(), clip(5000), o));
}

TEST(WhisperTranscribe, PreviousTextPromptsTheNextWindow) {
  WindowRunner runner(seeking_script);
  transcribe(runner, english_tokenizer(), clip(5000), greedy_options());
  // Only the segments kept (not the unfinished "w2") prompt the next window.
  EXPECT_EQ(runner.prompts[100].at(0), (std::vector<int32_t>{kSotPrev, ts(0), 1001, ts(1.0), kSot}));
  EXPECT_EQ(runner.prompts[3100].at(0),
            (std::vector<int32_t>{kSotPrev, ts(0), 1001, ts(1.0), ts(0), 1003, ts(2.0), kSot}));

  WindowRunner plain(seeking_script);
  auto o = greedy_options();
  o.condition_on_previous_text = false;
  transcribe(plain, english_tokenizer(), clip(5000), o);
  EXPECT_EQ(plain.prompts[100].at(0), (std::vector<int32_t>{kSot}));
}

TEST(WhisperTranscribe, RepetitiveTextFallsBackToAHigherTemperature) {
  // Temperature 0 repeats " w7" sixty times (compression ratio ~13); at 0.2 it reads " w1 w2".
  WindowRunner runner([](int64_t, int attempt, const std::vector<int32_t>& g) {
    if (attempt == 1) return probs({{g.size() < 60 ? 7 : kEot, 1.0}});
    if (g.empty()) return probs({{1001, 1.0}, {kNoSpeech, 1e-4}});
    if (g.size() == 1) return probs({{1002, 1.0}});
    return probs({{kEot, 1.0}});
  });
  auto o = greedy_options();
  o.without_timestamps = true;
  const Transcript t = transcribe(runner, english_tokenizer(), clip(1000), o);
  ASSERT_EQ(t.segments.size(), 1u);
  EXPECT_EQ(t.segments[0].text, " w1001 w1002");
  EXPECT_DOUBLE_EQ(t.segments[0].temperature, 0.2);
  EXPECT_LT(t.segments[0].compression_ratio, 2.4);
  EXPECT_DOUBLE_EQ(t.segments[0].start, 0.0);
  EXPECT_DOUBLE_EQ(t.segments[0].end, 10.0);  // no timestamps: the whole window
  EXPECT_EQ(runner.attempts(0), 2);
  EXPECT_EQ(runner.prompts[0].at(0), (std::vector<int32_t>{kSot, kNoTimestamps}));

  // Without a compression threshold the repetition stands.
  WindowRunner again([](int64_t, int, const std::vector<int32_t>& g) { return probs({{g.size() < 60 ? 7 : kEot, 1.0}}); });
  o.compression_ratio_threshold.reset();
  const Transcript r = transcribe(again, english_tokenizer(), clip(1000), o);
  ASSERT_EQ(r.segments.size(), 1u);
  EXPECT_EQ(r.segments[0].temperature, 0.0);
  EXPECT_GT(r.segments[0].compression_ratio, 10.0);
}

TEST(WhisperTranscribe, LowMeanLogProbabilityFallsBackUnlessTheWindowIsSilent) {
  // Temperature 0 only guesses (mean log-probability about -8); the next temperature is sure.
  auto script = [](double no_speech) {
    return [no_speech](int64_t, int attempt, const std::vector<int32_t>& g) {
      if (attempt == 1) {
        auto row = guess(g.empty() ? 1001 : kEot);
        if (g.empty()) row[kNoSpeech] = static_cast<float>(std::log(no_speech / (1 - no_speech) * (kVocab + 19)));
        return row;
      }
      return probs({{g.empty() ? 1002 : kEot, 1.0}});
    };
  };
  auto o = greedy_options();
  o.without_timestamps = true;
  WindowRunner unsure(script(0.1));
  const Transcript t = transcribe(unsure, english_tokenizer(), clip(1000), o);
  ASSERT_EQ(t.segments.size(), 1u);
  EXPECT_EQ(t.segments[0].text, " w1002");
  EXPECT_DOUBLE_EQ(t.segments[0].temperature, 0.2);
  EXPECT_EQ(unsure.attempts(0), 2);

  // With <|nocaptions|> likely as well, the window is silence: no fallback, no text.
  WindowRunner silent(script(0.9));
  const Transcript s = transcribe(silent, english_tokenizer(), clip(1000), o);
  EXPECT_TRUE(s.segments.empty());
  EXPECT_EQ(silent.attempts(0), 1);

  // Without the no-speech test the guess is kept once every temperature failed.
  o.no_speech_threshold.reset();
  o.temperatures = {0.0};
  WindowRunner kept(script(0.9));
  const Transcript k = transcribe(kept, english_tokenizer(), clip(1000), o);
  ASSERT_EQ(k.segments.size(), 1u);
  EXPECT_EQ(k.segments[0].text, " w1001");
  EXPECT_LT(k.segments[0].avg_logprob, -5.0);
}

TEST(WhisperTranscribe, WhenEveryTemperatureFailsTheBestMeanLogProbabilityWins) {
  // Every attempt guesses; the third guesses best. Tiny temperatures keep the sampling
  // at each guess's likeliest token, so the test does not depend on random draws.
  const std::vector<float> strength = {3, 4, 6, 5, 3, 2};
  WindowRunner runner([&](int64_t, int attempt, const std::vector<int32_t>& g) {
    return guess(g.empty() ? 1000 + attempt : kEot, strength[attempt - 1]);
  });
  auto o = greedy_options();
  o.without_timestamps = true;
  o.temperatures = {0.0, 0.001, 0.002, 0.003, 0.004, 0.005};
  o.prompt_reset_on_temperature = 0.0045;
  const Transcript t = transcribe(runner, english_tokenizer(), clip(4000), o);
  ASSERT_GE(t.segments.size(), 1u);
  EXPECT_EQ(t.segments[0].text, " w1003");
  EXPECT_DOUBLE_EQ(t.segments[0].temperature, 0.005);  // reported at the last temperature, as faster-whisper
  EXPECT_EQ(runner.attempts(0), 6);
  // That temperature is above prompt_reset_on_temperature: the next window starts without a prompt.
  EXPECT_EQ(runner.prompts[3000].at(0), (std::vector<int32_t>{kSot, kNoTimestamps}));
}

TEST(WhisperTranscribe, AWindowDecodedHotDoesNotPromptTheNext) {
  // Window 0 repeats itself at 0, 0.2 and 0.4; at 0.6 it reads " w1001". Window 3000 reads " w1002".
  auto script = [](int64_t seek, int attempt, const std::vector<int32_t>& g) {
    if (seek == 0 && attempt <= 3) return probs({{g.size() < 60 ? 7 : kEot, 1.0}});
    return probs({{g.empty() ? (seek == 0 ? 1001 : 1002) : kEot, 1.0}});
  };
  auto o = greedy_options();
  o.without_timestamps = true;
  WindowRunner hot(script);
  const Transcript t = transcribe(hot, english_tokenizer(), clip(4000), o);
  ASSERT_EQ(t.segments.size(), 2u);
  EXPECT_DOUBLE_EQ(t.segments[0].temperature, 0.6);
  EXPECT_EQ(hot.prompts[3000].at(0), (std::vector<int32_t>{kSot, kNoTimestamps}));
  o.prompt_reset_on_temperature = 0.7;
  WindowRunner kept(script);
  transcribe(kept, english_tokenizer(), clip(4000), o);
  EXPECT_EQ(kept.prompts[3000].at(0), (std::vector<int32_t>{kSotPrev, 1001, kSot, kNoTimestamps}));
}

TEST(WhisperTranscribe, EnglishOnlyModelsTranscribeEnglish) {
  WindowRunner runner([](int64_t, int, const std::vector<int32_t>&) { return probs({{kEot, 1.0}}); });
  auto o = greedy_options();
  o.language = "de";
  o.without_timestamps = true;
  o.suppress_blank = false;  // lets the text end at once
  const Transcript t = transcribe(runner, english_tokenizer(), clip(300), o);
  EXPECT_EQ(t.language, "en");
  EXPECT_TRUE(t.segments.empty());
  EXPECT_EQ(runner.prompts[0].at(0), (std::vector<int32_t>{kSot, kNoTimestamps}));
  o.task = "summarize";
  EXPECT_THROW(transcribe(runner, english_tokenizer(), clip(300), o), Error);
  // No audio, no windows.
  WindowRunner idle([](int64_t, int, const std::vector<int32_t>&) { return probs({{kEot, 1.0}}); });
  EXPECT_TRUE(transcribe(idle, english_tokenizer(), clip(0), greedy_options()).segments.empty());
  EXPECT_TRUE(idle.encoded.empty());
}

// A multilingual layout (51865 tokens): <|endoftext|> 50257, <|startoftranscript|>
// 50258, languages from 50259 (en, zh, de, es, ru, ko, fr...), <|translate|> 50358,
// <|transcribe|> 50359, <|notimestamps|> 50363, timestamps from 50364.
WhisperSpec multilingual_spec(std::vector<std::string>& vocabulary) {
  for (int i = 0; i < 50257; ++i) vocabulary.push_back("\xC4\xA0w" + std::to_string(i));
  vocabulary.push_back("<|endoftext|>");
  vocabulary.push_back("<|startoftranscript|>");
  const auto& codes = WhisperTokenizer::language_codes();
  for (size_t i = 0; i < 99; ++i) vocabulary.push_back(special(codes[i]));
  for (const char* s : {"<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>",
                        "<|notimestamps|>"})
    vocabulary.push_back(s);
  for (int i = 0; i <= 1500; ++i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "<|%.2f|>", i * 0.02);
    vocabulary.push_back(buf);
  }
  WhisperSpec spec;
  spec.n_mels = 80;
  spec.n_vocab = static_cast<uint32_t>(vocabulary.size());
  spec.n_text_ctx = 448;
  spec.eot = 50257;
  spec.sot = 50258;
  spec.translate = 50358;
  spec.transcribe = 50359;
  spec.sot_lm = 50360;
  spec.sot_prev = 50361;
  spec.no_speech = 50362;
  spec.no_timestamps = 50363;
  spec.timestamp_begin = 50364;
  for (int32_t id = 50259; id < 50358; ++id) spec.lang_ids.push_back(id);
  spec.suppress_ids_begin = {220, 50257};
  return spec;
}

TEST(WhisperTranscribe, DetectsTheLanguageOfAMultilingualModelAndAsksForTheTask) {
  std::vector<std::string> vocabulary;
  const WhisperSpec spec = multilingual_spec(vocabulary);
  const WhisperTokenizer tokenizer(spec, vocabulary);
  ASSERT_TRUE(tokenizer.multilingual());
  static constexpr int32_t kEn = 50259, kDe = 50261, kFr = 50265;
  // After <|startoftranscript|>: German (0.07) over English (0.03) among the languages,
  // though a text token is likelier still; the text then ends.
  auto script = [](int64_t, int, const std::vector<int32_t>& g) {
    if (g.empty()) return probs({{1001, 0.9}, {kDe, 0.07}, {kEn, 0.03}}, 51865);
    return probs({{50257, 1.0}}, 51865);
  };
  auto o = greedy_options();
  o.without_timestamps = true;
  WindowRunner runner(script, spec);
  const Transcript t = transcribe(runner, tokenizer, clip(500), o);
  EXPECT_EQ(t.language, "de");
  EXPECT_EQ(runner.encoded, (std::vector<int64_t>{0}));  // detection and decoding share the encoded window
  ASSERT_EQ(runner.prompts[0].size(), 2u);
  EXPECT_EQ(runner.prompts[0][0], (std::vector<int32_t>{50258}));
  EXPECT_EQ(runner.prompts[0][1], (std::vector<int32_t>{50258, kDe, 50359, 50363}));
  ASSERT_EQ(t.segments.size(), 1u);
  EXPECT_EQ(t.segments[0].text, " w1001");

  const auto probabilities = detect_language(runner, tokenizer);
  ASSERT_EQ(probabilities.size(), 99u);
  EXPECT_EQ(probabilities[0].code, "de");
  EXPECT_NEAR(probabilities[0].probability, 0.7, 1e-4);
  EXPECT_EQ(probabilities[1].code, "en");
  EXPECT_NEAR(probabilities[1].probability, 0.3, 1e-4);

  // A language given: no detection; translation asked with <|translate|>.
  o.language = "fr";
  o.task = "translate";
  WindowRunner given(script, spec);
  const Transcript f = transcribe(given, tokenizer, clip(500), o);
  EXPECT_EQ(f.language, "fr");
  EXPECT_EQ(f.task, "translate");
  ASSERT_EQ(given.prompts[0].size(), 1u);
  EXPECT_EQ(given.prompts[0][0], (std::vector<int32_t>{50258, kFr, 50358, 50363}));
  o.language = "xx";
  EXPECT_THROW(transcribe(given, tokenizer, clip(500), o), Error);
}

TEST(WhisperTranscribe, InitialPromptIsEncodedAfterASpace) {
  RAYO_REQUIRE_SHARED();
  if (const auto why = test::real_whisper_absent(); !why.empty()) GTEST_SKIP() << why;
  const std::string folder = test::real_whisper_dir().string();
  const auto files = load_ct2_whisper(folder);
  const auto tokenizer = WhisperTokenizer::from_files(files);
  WindowRunner runner([](int64_t, int, const std::vector<int32_t>& g) { return probs({{g.empty() ? 383 : kEot, 1.0}}); },
                      files.spec);
  auto o = greedy_options();
  o.initial_prompt = "  Hello world. ";
  o.without_timestamps = true;
  const Transcript t = transcribe(runner, tokenizer, clip(500), o);
  std::vector<int32_t> expected = {kSotPrev};
  for (const int32_t id : tokenizer.encode(" Hello world.")) expected.push_back(id);
  expected.push_back(kSot);
  expected.push_back(kNoTimestamps);
  EXPECT_EQ(runner.prompts[0].at(0), expected);
  ASSERT_EQ(t.segments.size(), 1u);
  EXPECT_EQ(t.segments[0].text, " The");

  // A prompt that is not UTF-8 is refused before anything is decoded.
  o.initial_prompt = "caf\xe9 names";
  const size_t windows = runner.prompts.size();
  try {
    transcribe(runner, tokenizer, clip(500), o);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "the initial prompt is not valid UTF-8");
  }
  EXPECT_EQ(runner.prompts.size(), windows);
}

TEST(WhisperTranscribe, CompressionRatioIsZlibsAsPythonComputesIt) {
  // len(b) / len(zlib.compress(b)), computed with Python 3.
  EXPECT_DOUBLE_EQ(compression_ratio("The quick brown fox jumps over the lazy dog."), 44.0 / 51.0);
  EXPECT_DOUBLE_EQ(compression_ratio("a"), 1.0 / 9.0);
  std::string repeated;
  for (int i = 0; i < 60; ++i) repeated += " w1";
  EXPECT_DOUBLE_EQ(compression_ratio(repeated.substr(1)), 12.785714285714286);
  EXPECT_EQ(compression_ratio(""), 0.0);
}

TEST(WhisperTranscribe, WindowPromptKeepsTheLast223PreviousTokens) {
  std::vector<int32_t> previous(300);
  for (int i = 0; i < 300; ++i) previous[i] = i;
  const std::vector<int32_t> sot = {kSot};
  const auto p = window_prompt(english_tokenizer(), previous, sot, true);
  ASSERT_EQ(p.size(), 1u + 223u + 2u);
  EXPECT_EQ(p.front(), kSotPrev);
  EXPECT_EQ(p[1], 77);
  EXPECT_EQ(p[223], 299);
  EXPECT_EQ(p[224], kSot);
  EXPECT_EQ(p[225], kNoTimestamps);
  EXPECT_EQ(window_prompt(english_tokenizer(), {}, sot, false), sot);
}

// faster-whisper's segments of long.wav's first window (greedy, timestamps): six
// finished segments, the window's tokens also holding an unfinished seventh.
TEST(WhisperTranscribe, SplitsAWindowAsFasterWhisperDid) {
  RAYO_REQUIRE_SHARED();
  std::ifstream in(test::shared_path("whisper/reference/faster-whisper-greedy-f32-timestamps.json"));
  const auto j = nlohmann::json::parse(in);
  const auto& segments = j["segments"]["long"];
  std::vector<int32_t> window;
  size_t first_window = 0;
  for (const auto& s : segments) {
    if (s["seek"].get<int64_t>() != 0) break;
    const auto tokens = s["tokens"].get<std::vector<int32_t>>();
    window.insert(window.end(), tokens.begin(), tokens.end());
    ++first_window;
  }
  ASSERT_EQ(first_window, 6u);
  auto unfinished = window;
  unfinished.push_back(window.back());  // the unfinished segment opens where the last one closed
  unfinished.push_back(383);
  const auto split = split_segments_by_timestamps(english_tokenizer(), unfinished, 0.0, 3000, 30.0, 0);
  ASSERT_EQ(split.segments.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_DOUBLE_EQ(split.segments[i].start, segments[i]["start"].get<double>()) << i;
    EXPECT_DOUBLE_EQ(split.segments[i].end, segments[i]["end"].get<double>()) << i;
    EXPECT_EQ(split.segments[i].tokens, segments[i]["tokens"].get<std::vector<int32_t>>()) << i;
  }
  EXPECT_EQ(split.next_seek, segments[6]["seek"].get<int64_t>());  // 2892: the next window's start
  EXPECT_FALSE(split.single_timestamp_ending);

  // Ending on a lone timestamp: nothing more was said, the next window follows this one.
  const auto whole = split_segments_by_timestamps(english_tokenizer(), window, 0.0, 3000, 30.0, 0);
  EXPECT_TRUE(whole.single_timestamp_ending);
  EXPECT_EQ(whole.segments.size(), 6u);
  EXPECT_EQ(whole.next_seek, 3000);

  // The second window's times are offset by its seek (28.92 s), to the bit.
  std::vector<int32_t> second;
  for (size_t i = 6; i < segments.size() && segments[i]["seek"].get<int64_t>() == 2892; ++i) {
    const auto tokens = segments[i]["tokens"].get<std::vector<int32_t>>();
    second.insert(second.end(), tokens.begin(), tokens.end());
  }
  const auto split2 = split_segments_by_timestamps(english_tokenizer(), second, 2892 * 0.01, 3000, 30.0, 2892);
  for (size_t i = 0; i < split2.segments.size(); ++i) {
    EXPECT_EQ(split2.segments[i].start, segments[6 + i]["start"].get<double>()) << i;
    EXPECT_EQ(split2.segments[i].end, segments[6 + i]["end"].get<double>()) << i;
  }

  // One segment without a pair of timestamps: it ends at its last timestamp.
  const auto u01 = j["segments"]["u01_plain"][0]["tokens"].get<std::vector<int32_t>>();
  const auto one = split_segments_by_timestamps(english_tokenizer(), u01, 0.0, 350, 3.5, 0);
  ASSERT_EQ(one.segments.size(), 1u);
  EXPECT_DOUBLE_EQ(one.segments[0].end, 3.5);
  EXPECT_EQ(one.next_seek, 350);
}

}  // namespace
}  // namespace rayo::whisper
