#pragma once
// A Whisper model ready to transcribe: its files, tokenizer and runner, loaded
// once and shared by every request (rayo transcribe's files, rayo serve's
// uploads). The runner holds one window's state at a time, so transcriptions
// from several threads take turns; the log-mel of audio in memory, the part
// that needs no model, is computed before the turn (a streamed recording's
// windows are computed during it).
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "audio/audio_stream.h"

#include "whisper/ct2_model.h"
#include "whisper/graph_runner.h"
#include "whisper/transcribe.h"
#include "whisper/transcript.h"
#include "whisper/whisper_tokenizer.h"

namespace rayo::whisper {

// Recordings this long or longer are streamed (two passes over the audio, a
// window of log-mel in memory); shorter ones are decoded whole, once.
inline constexpr double kStreamFromSeconds = 600;

// Audio to transcribe: what errors call it, and how to open it from its start
// (a long recording is opened twice).
struct AudioInput {
  std::string name;
  std::function<std::unique_ptr<audio::AudioStream>()> open;
};

class Transcriber {
 public:
  // Loads a Whisper model (load_whisper: a CTranslate2 folder or a whisper.cpp
  // file); throws rayo::Error in one line.
  Transcriber(const std::string& model, const GraphRunnerOptions& options);
  Transcriber(const Transcriber&) = delete;
  Transcriber& operator=(const Transcriber&) = delete;

  const WhisperSpec& spec() const { return files_.spec; }
  const WhisperTokenizer& tokenizer() const { return tokenizer_; }
  // Beams or samples a transcription may use (GraphRunnerOptions::max_sequences).
  int max_sequences() const { return max_sequences_; }
  int n_threads() const { return runner_.n_threads(); }

  // Transcribes 16 kHz mono samples. options.beam_size and best_of must not
  // exceed max_sequences(). Throws rayo::Error.
  Transcript transcribe(std::span<const float> samples, const TranscribeOptions& options);
  // Transcribes audio of any length: kStreamFromSeconds or more (as its
  // container declares) in bounded memory (audio/mel_source.h).
  Transcript transcribe(const AudioInput& audio, const TranscribeOptions& options);

 private:
  void check(const TranscribeOptions& options) const;

  WhisperFiles files_;  // before runner_, which views its weights
  WhisperTokenizer tokenizer_;
  GraphWhisperRunner runner_;
  int max_sequences_;
  std::mutex turn_;
};

}  // namespace rayo::whisper
