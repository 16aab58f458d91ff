#pragma once
// Long-form transcription as faster-whisper 1.2.1's WhisperModel.transcribe does
// it without VAD (generate_segments): 30-second windows from a seek position;
// each window decoded with temperature fallback (0, 0.2, ... 1.0 while the text
// compresses too well or its mean log-probability is too low); windows judged
// silent skipped; the decoded timestamps split a window into segments and say
// where the next window starts; the text so far prompts the next window.
//
//   auto tokenizer = WhisperTokenizer::from_files(files);
//   Transcript t = transcribe(runner, tokenizer, mel, TranscribeOptions{});
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "audio/log_mel.h"
#include "audio/mel_source.h"
#include "whisper/decoding.h"
#include "whisper/transcript.h"
#include "whisper/whisper_runner.h"
#include "whisper/whisper_tokenizer.h"

namespace rayo::whisper {

// faster-whisper's transcribe() options and defaults (those rayo implements).
struct TranscribeOptions {
  std::string language;             // "en", ...; empty: detected from the first window (multilingual models)
  std::string task = "transcribe";  // or "translate"
  int beam_size = 5;
  int best_of = 5;
  float patience = 1.0f;
  float length_penalty = 1.0f;
  std::vector<double> temperatures = {0.0, 0.2, 0.4, 0.6, 0.8, 1.0};
  std::optional<double> compression_ratio_threshold = 2.4;
  std::optional<double> log_prob_threshold = -1.0;
  std::optional<double> no_speech_threshold = 0.6;
  bool condition_on_previous_text = true;
  double prompt_reset_on_temperature = 0.5;
  std::optional<std::string> initial_prompt;
  bool suppress_blank = true;
  std::vector<int32_t> suppress_tokens = {-1};  // -1: the non-speech symbols (WhisperTokenizer::non_speech_tokens)
  bool without_timestamps = false;
  double max_initial_timestamp = 1.0;
  uint64_t seed = 0;  // of the sampling at temperatures above 0

  // Called after each window with the mel frames done and the total (100 per second).
  std::function<void(int64_t done, int64_t total)> progress;
};

// Transcribes the whole clip. The runner must be for the tokenizer's model. An
// English-only model transcribes English whatever `language` says (faster-whisper's
// rule). Throws rayo::Error for an unknown language or task, or no temperatures.
Transcript transcribe(WhisperRunner& runner, const WhisperTokenizer& tokenizer, const audio::LogMel& mel,
                      const TranscribeOptions& options);
// The same from windows of a log-mel however it is held (audio/mel_source.h:
// a long recording streamed in bounded memory).
Transcript transcribe(WhisperRunner& runner, const WhisperTokenizer& tokenizer, audio::MelSource& mel,
                      const TranscribeOptions& options);

// ---- The steps, public for tests and for other front ends ----

// len(text) / len(zlib.compress(text)) over the UTF-8 bytes, as faster-whisper
// judges repetitive output (0 for empty text).
double compression_ratio(std::string_view text);

// The prompt for a window: <|startofprev|> and the last 223 previous tokens (when
// there are any), the start-of-transcript sequence, <|notimestamps|> when asked.
std::vector<int32_t> window_prompt(const WhisperTokenizer& tokenizer, std::span<const int32_t> previous_tokens,
                                   std::span<const int32_t> sot_sequence, bool without_timestamps, int max_length = 448);

// One window's decoding with faster-whisper's temperature fallback
// (generate_with_fallback). The window must already be encoded.
struct FallbackResult {
  DecodeResult result;
  double temperature = 0;  // the last one tried when every one failed (faster-whisper's)
  double compression_ratio = 0;
};
FallbackResult decode_with_fallback(WhisperRunner& runner, const WhisperTokenizer& tokenizer,
                                    std::span<const int32_t> prompt, const TranscribeOptions& options,
                                    std::span<const int32_t> suppress_tokens, std::mt19937_64& rng);

// faster-whisper's _split_segments_by_timestamps: the segments a window's tokens
// make (start and end in seconds) and the seek of the next window.
struct SplitSegment {
  double start = 0, end = 0;
  std::vector<int32_t> tokens;
};
struct SplitResult {
  std::vector<SplitSegment> segments;
  int64_t next_seek = 0;
  bool single_timestamp_ending = false;
};
SplitResult split_segments_by_timestamps(const WhisperTokenizer& tokenizer, std::span<const int32_t> tokens,
                                         double time_offset, int64_t segment_size, double segment_duration,
                                         int64_t seek);

// The language of the encoded window: probabilities of the model's language tokens
// at the first step after <|startoftranscript|>, likeliest first (CTranslate2's
// detect_language). Multilingual models only.
struct LanguageProbability {
  std::string code;
  double probability = 0;
};
std::vector<LanguageProbability> detect_language(WhisperRunner& runner, const WhisperTokenizer& tokenizer);

}  // namespace rayo::whisper
