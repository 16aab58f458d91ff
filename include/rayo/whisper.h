#pragma once
// rayo's speech to text: a Whisper model (a CTranslate2 folder, as
// faster-whisper's users have it, or a whisper.cpp ggml-*.bin file) transcribing audio files or 16 kHz samples,
// as faster-whisper's WhisperModel.transcribe does (the same decoding rules,
// options and defaults; segments with their times and statistics):
//
//   rayo::Whisper model("whisper-tiny.en", {.n_threads = 2});
//   rayo::Transcription t = model.transcribe_file("clip.wav");
//   for (const auto& s : t.segments) std::cout << s.start << " " << s.text << "\n";
//
// Failures throw rayo::Error (one line). Only standard types cross this header.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rayo/error.h"

namespace rayo {

// How the model is loaded: WhisperModel(model_size_or_path, device, compute_type, cpu_threads).
struct WhisperOptions {
  std::string device = "auto";          // "auto" (the CPU), "cpu" or "cuda"
  std::string compute_type = "default";  // "default" (weights as stored), "float32", "float16" or "int8"
  int n_threads = 0;                    // CPU threads; 0: the physical cores
  int max_beams = 5;                    // the largest beam_size / best_of a call may ask for
};

// One call's decoding, with faster-whisper's transcribe() defaults.
struct TranscribeOptions {
  std::optional<std::string> language{};  // "en", ...; absent: detected (multilingual models)
  std::string task = "transcribe";        // or "translate" (into English; multilingual models)
  int beam_size = 5;
  int best_of = 5;
  float patience = 1.0f;
  float length_penalty = 1.0f;
  std::vector<double> temperature{0.0, 0.2, 0.4, 0.6, 0.8, 1.0};  // tried in turn while a window fails
  std::optional<double> compression_ratio_threshold = 2.4;
  std::optional<double> log_prob_threshold = -1.0;
  std::optional<double> no_speech_threshold = 0.6;
  bool condition_on_previous_text = true;
  std::optional<std::string> initial_prompt{};
  bool without_timestamps = false;
  bool suppress_blank = true;
  double max_initial_timestamp = 1.0;
  uint64_t seed = 0;  // of the sampling at temperatures above 0
};

// faster-whisper's Segment.
struct TranscriptSegment {
  int id = 0;
  int64_t seek = 0;           // the window's first frame (100 a second)
  double start = 0, end = 0;  // seconds
  std::string text{};
  std::vector<int32_t> tokens{};
  double temperature = 0;
  double avg_logprob = 0;
  double compression_ratio = 0;
  double no_speech_prob = 0;
};

// A transcript and faster-whisper's TranscriptionInfo's main fields.
struct Transcription {
  std::string language{};          // the code, "en", ...
  double language_probability = 1;  // of the detected language (1 when given or English-only)
  double duration = 0;              // seconds of audio
  std::vector<TranscriptSegment> segments{};
  std::string text() const;         // the segments' texts joined, without the outer spaces
};

// Called after each 30-s window with the seconds done and the total. An
// exception it throws leaves the call (the Whisper stays usable): Python's
// Ctrl-C stops a transcription that way.
using TranscribeProgress = std::function<void(double done_seconds, double total_seconds)>;

class Whisper {
 public:
  explicit Whisper(const std::string& model_path, const WhisperOptions& options = {});
  ~Whisper();
  Whisper(Whisper&&) noexcept;
  Whisper& operator=(Whisper&&) noexcept;

  // An audio file (WAV, FLAC, OGG, MP3; any rate and channels). Long
  // recordings stream in bounded memory.
  Transcription transcribe_file(const std::string& path, const TranscribeOptions& options = {},
                                const TranscribeProgress& progress = {});
  // Mono samples in [-1, 1] at 16 kHz.
  Transcription transcribe(std::span<const float> samples, const TranscribeOptions& options = {},
                           const TranscribeProgress& progress = {});

  bool multilingual() const;
  int n_mels() const;
  // Language codes the model knows ("en", "de", ...; only "en" for English-only models).
  std::vector<std::string> languages() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rayo
