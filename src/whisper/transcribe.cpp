#include "whisper/transcribe.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>

#include "audio/mel_window.h"
#include "common/error.h"
#include "tokenizer/utf8.h"

namespace rayo::whisper {
namespace {

// Mel frames per timestamp step (0.02 s at 100 frames per second): faster-whisper's input_stride.
constexpr int64_t kFramesPerTimestamp = 2;

// Python's str.strip() for the whitespace decoded text holds.
std::string_view strip(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

}  // namespace

double compression_ratio(std::string_view text) {
  if (text.empty()) return 0.0;
  uLongf size = compressBound(static_cast<uLong>(text.size()));
  std::vector<Bytef> out(size);
  // zlib.compress(data) in Python: level -1, the library's default.
  const int rc = compress2(out.data(), &size, reinterpret_cast<const Bytef*>(text.data()),
                           static_cast<uLong>(text.size()), Z_DEFAULT_COMPRESSION);
  RAYO_CHECK(rc == Z_OK, "zlib compress2 returned ", rc);
  return static_cast<double>(text.size()) / static_cast<double>(size);
}

std::vector<int32_t> window_prompt(const WhisperTokenizer& tokenizer, std::span<const int32_t> previous_tokens,
                                   std::span<const int32_t> sot_sequence, bool without_timestamps, int max_length) {
  std::vector<int32_t> prompt;
  if (!previous_tokens.empty()) {
    prompt.push_back(tokenizer.spec().sot_prev);
    const size_t keep = std::min(previous_tokens.size(), static_cast<size_t>(max_length / 2 - 1));
    prompt.insert(prompt.end(), previous_tokens.end() - static_cast<std::ptrdiff_t>(keep), previous_tokens.end());
  }
  prompt.insert(prompt.end(), sot_sequence.begin(), sot_sequence.end());
  if (without_timestamps) prompt.push_back(tokenizer.spec().no_timestamps);
  return prompt;
}

FallbackResult decode_with_fallback(WhisperRunner& runner, const WhisperTokenizer& tokenizer,
                                    std::span<const int32_t> prompt, const TranscribeOptions& options,
                                    std::span<const int32_t> suppress_tokens, std::mt19937_64& rng) {
  if (options.temperatures.empty()) fail("no temperatures to decode at");
  std::vector<FallbackResult> all, below_compression_threshold;
  for (const double temperature : options.temperatures) {
    DecodeOptions d;
    if (temperature > 0) {
      d.beam_size = 1;
      d.best_of = options.best_of;
      d.temperature = static_cast<float>(temperature);
    } else {
      d.beam_size = options.beam_size;
      d.patience = options.patience;
    }
    d.length_penalty = options.length_penalty;
    d.suppress_tokens.assign(suppress_tokens.begin(), suppress_tokens.end());
    d.suppress_blank = options.suppress_blank;
    d.max_initial_timestamp = options.max_initial_timestamp;

    FallbackResult r;
    r.result = decode_window(runner, prompt, d, rng);
    r.temperature = temperature;
    r.compression_ratio = compression_ratio(strip(tokenizer.decode(r.result.tokens)));
    all.push_back(r);

    bool needs_fallback = false;
    if (options.compression_ratio_threshold) {
      if (r.compression_ratio > *options.compression_ratio_threshold)
        needs_fallback = true;  // too repetitive
      else
        below_compression_threshold.push_back(r);
    }
    const bool low_logprob = options.log_prob_threshold && r.result.avg_logprob < *options.log_prob_threshold;
    if (low_logprob) needs_fallback = true;
    // Silence: the no-speech test will skip this window, no point sampling it again.
    if (options.no_speech_threshold && r.result.no_speech_prob > *options.no_speech_threshold && low_logprob)
      needs_fallback = false;
    if (!needs_fallback) return r;
  }
  // Every temperature failed: the best mean log-probability among the results that
  // compress well enough (or among all), reported at the last temperature.
  const auto& pool = below_compression_threshold.empty() ? all : below_compression_threshold;
  FallbackResult best = pool.front();
  for (const auto& r : pool)
    if (r.result.avg_logprob > best.result.avg_logprob) best = r;
  best.temperature = options.temperatures.back();
  return best;
}

SplitResult split_segments_by_timestamps(const WhisperTokenizer& tokenizer, std::span<const int32_t> tokens,
                                         double time_offset, int64_t segment_size, double segment_duration,
                                         int64_t seek) {
  const int32_t ts_begin = tokenizer.spec().timestamp_begin;
  auto is_ts = [&](int32_t t) { return t >= ts_begin; };
  SplitResult out;
  const size_t n = tokens.size();
  out.single_timestamp_ending = n >= 2 && !is_ts(tokens[n - 2]) && is_ts(tokens[n - 1]);

  // Where two timestamps meet, one segment ends and the next begins.
  std::vector<size_t> consecutive;
  for (size_t i = 1; i < n; ++i)
    if (is_ts(tokens[i]) && is_ts(tokens[i - 1])) consecutive.push_back(i);

  if (!consecutive.empty()) {
    std::vector<size_t> slices = consecutive;
    if (out.single_timestamp_ending) slices.push_back(n);
    size_t last_slice = 0;
    for (const size_t current : slices) {
      const auto sliced = tokens.subspan(last_slice, current - last_slice);
      SplitSegment s;
      s.start = time_offset + (sliced.front() - ts_begin) * kTimePrecision;
      s.end = time_offset + (sliced.back() - ts_begin) * kTimePrecision;
      s.tokens.assign(sliced.begin(), sliced.end());
      out.segments.push_back(std::move(s));
      last_slice = current;
    }
    if (out.single_timestamp_ending) {
      out.next_seek = seek + segment_size;  // nothing spoken after the last timestamp
    } else {
      // The last segment is unfinished: the next window starts at its opening timestamp.
      out.next_seek = seek + (tokens[last_slice - 1] - ts_begin) * kFramesPerTimestamp;
    }
  } else {
    double duration = segment_duration;
    int32_t last_ts = -1;
    for (const int32_t t : tokens)
      if (is_ts(t)) last_ts = t;
    if (last_ts >= 0 && last_ts != ts_begin) duration = (last_ts - ts_begin) * kTimePrecision;
    out.segments.push_back({time_offset, time_offset + duration, std::vector<int32_t>(tokens.begin(), tokens.end())});
    out.next_seek = seek + segment_size;
  }
  return out;
}

std::vector<LanguageProbability> detect_language(WhisperRunner& runner, const WhisperTokenizer& tokenizer) {
  if (!tokenizer.multilingual()) fail("language detection needs a multilingual Whisper model");
  const WhisperSpec& spec = tokenizer.spec();
  std::vector<int32_t> ids = spec.lang_ids.empty() ? tokenizer.language_tokens() : spec.lang_ids;
  if (ids.empty()) fail("the Whisper model has no language tokens");
  std::vector<float> logits;
  const std::vector<std::vector<int32_t>> sequences = {{spec.sot}};
  runner.decode(sequences, logits);
  if (logits.size() != spec.n_vocab) fail("the Whisper runner returned ", logits.size(), " logits, not ", spec.n_vocab);
  // Softmax over the language tokens alone.
  float m = -INFINITY;
  for (const int32_t id : ids) m = std::max(m, logits.at(id));
  double total = 0;
  std::vector<LanguageProbability> out;
  for (const int32_t id : ids) {
    const double p = std::exp(static_cast<double>(logits[id]) - m);
    total += p;
    out.push_back({tokenizer.language_code(id), p});
  }
  for (auto& l : out) l.probability /= total;
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.probability > b.probability; });
  return out;
}

Transcript transcribe(WhisperRunner& runner, const WhisperTokenizer& tokenizer, const audio::LogMel& mel,
                      const TranscribeOptions& options) {
  audio::InMemoryMel source(mel);
  return transcribe(runner, tokenizer, source, options);
}

Transcript transcribe(WhisperRunner& runner, const WhisperTokenizer& tokenizer, audio::MelSource& mel,
                      const TranscribeOptions& options) {
  if (options.temperatures.empty()) fail("no temperatures to decode at");
  if (options.task != "transcribe" && options.task != "translate")
    fail("unknown task '", options.task, "' (Whisper's tasks are transcribe and translate)");
  if (options.initial_prompt && !tokenizer::is_valid_utf8(*options.initial_prompt))
    fail("the initial prompt is not valid UTF-8");
  if (static_cast<uint32_t>(mel.n_mels()) != runner.spec().n_mels)
    fail("the log-mel has ", mel.n_mels(), " mel bands, the Whisper model takes ", runner.spec().n_mels);

  const int64_t content_frames = mel.content_frames();
  Transcript transcript;
  transcript.task = options.task;
  transcript.duration = static_cast<double>(content_frames) * kSecondsPerFrame;

  int64_t encoded_seek = -1;  // the window the runner holds
  auto encode = [&](int64_t seek) {
    if (seek == encoded_seek) return;
    runner.encode(mel.window(seek));
    encoded_seek = seek;
  };

  std::string language = options.language;
  if (!tokenizer.multilingual()) {
    language = "en";  // English-only models: faster-whisper ignores any other language
  } else if (language.empty()) {
    encode(0);
    const auto detected = detect_language(runner, tokenizer).front();
    language = detected.code;
    transcript.language_probability = detected.probability;
  }
  transcript.language = language;
  const std::vector<int32_t> sot_sequence = tokenizer.sot_sequence(language, options.task);
  const std::vector<int32_t> suppress = tokenizer.suppressed_tokens(options.suppress_tokens);
  std::mt19937_64 rng(options.seed);

  std::vector<int32_t> all_tokens;
  size_t prompt_reset_since = 0;
  if (options.initial_prompt) {
    std::string text = " ";  // faster-whisper: " " + initial_prompt.strip()
    text += strip(*options.initial_prompt);
    const auto tokens = tokenizer.encode(text);
    all_tokens.insert(all_tokens.end(), tokens.begin(), tokens.end());
  }

  int64_t seek = 0;
  int id = 0;
  while (seek < content_frames) {
    const double time_offset = static_cast<double>(seek) * kSecondsPerFrame;
    const int64_t segment_size = std::min<int64_t>(audio::kWhisperWindowFrames, content_frames - seek);
    const double segment_duration = static_cast<double>(segment_size) * kSecondsPerFrame;
    const auto previous = std::span<const int32_t>(all_tokens).subspan(prompt_reset_since);
    const auto prompt = window_prompt(tokenizer, previous, sot_sequence, options.without_timestamps);

    encode(seek);
    const FallbackResult r = decode_with_fallback(runner, tokenizer, prompt, options, suppress, rng);

    if (options.no_speech_threshold) {
      // Silent when <|nospeech|> is likely, unless the text was confident anyway.
      bool should_skip = r.result.no_speech_prob > *options.no_speech_threshold;
      if (options.log_prob_threshold && r.result.avg_logprob > *options.log_prob_threshold) should_skip = false;
      if (should_skip) {
        seek += segment_size;
        if (options.progress) options.progress(std::min(seek, content_frames), content_frames);
        continue;
      }
    }

    const int64_t window_seek = seek;
    SplitResult split = split_segments_by_timestamps(tokenizer, r.result.tokens, time_offset, segment_size,
                                                     segment_duration, seek);
    // faster-whisper would decode this window again forever when its timestamps give
    // no progress (an unfinished segment at <|0.00|>); rayo moves on to the next window.
    seek = split.next_seek > window_seek ? split.next_seek : window_seek + segment_size;
    for (auto& s : split.segments) {
      std::string text = tokenizer.decode(s.tokens);
      if (s.start == s.end || strip(text).empty()) continue;
      all_tokens.insert(all_tokens.end(), s.tokens.begin(), s.tokens.end());
      Segment segment;
      segment.id = ++id;
      segment.seek = window_seek;
      segment.start = s.start;
      segment.end = s.end;
      segment.text = std::move(text);
      segment.tokens = std::move(s.tokens);
      segment.temperature = r.temperature;
      segment.avg_logprob = r.result.avg_logprob;
      segment.compression_ratio = r.compression_ratio;
      segment.no_speech_prob = r.result.no_speech_prob;
      transcript.segments.push_back(std::move(segment));
    }
    // A window sampled hot is a poor prompt: the next window starts afresh.
    if (!options.condition_on_previous_text || r.temperature > options.prompt_reset_on_temperature)
      prompt_reset_since = all_tokens.size();
    if (options.progress) options.progress(std::min(seek, content_frames), content_frames);
  }
  return transcript;
}

}  // namespace rayo::whisper
