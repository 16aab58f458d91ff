#pragma once
// The result of a transcription, as faster-whisper returns it: segments with
// their start and end times (seconds from the start of the audio), text,
// tokens and the statistics the temperature fallback judged them by.
#include <cstdint>
#include <string>
#include <vector>

namespace rayo::whisper {

struct Segment {
  int id = 0;
  int64_t seek = 0;         // the window's first mel frame (100 per second)
  double start = 0, end = 0;  // seconds
  std::string text;         // as decoded, usually with a leading space
  std::vector<int32_t> tokens;  // the text tokens (timestamps included when on)
  double temperature = 0;
  double avg_logprob = 0;
  double compression_ratio = 0;
  double no_speech_prob = 0;
};

struct Transcript {
  std::string language;     // "en", ...
  double language_probability = 1;  // of the detected language (1 when given or English-only)
  std::string task;         // "transcribe" or "translate"
  double duration = 0;      // seconds of audio
  std::vector<Segment> segments;

  // The segments' texts joined, leading and trailing spaces removed.
  std::string text() const;
};

}  // namespace rayo::whisper
