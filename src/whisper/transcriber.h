#pragma once
// A Whisper model ready to transcribe: its files, tokenizer and runner, loaded
// once and shared by every request (rayo transcribe's files, rayo serve's
// uploads). The runner holds one window's state at a time, so transcriptions
// from several threads take turns; the audio's log-mel, the part that needs no
// model, is computed before the turn.
#include <mutex>
#include <span>
#include <string>

#include "whisper/ct2_model.h"
#include "whisper/graph_runner.h"
#include "whisper/transcribe.h"
#include "whisper/transcript.h"
#include "whisper/whisper_tokenizer.h"

namespace rayo::whisper {

class Transcriber {
 public:
  // Loads a CTranslate2 Whisper folder; throws rayo::Error in one line.
  Transcriber(const std::string& folder, const GraphRunnerOptions& options);
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

 private:
  WhisperFiles files_;  // before runner_, which views its weights
  WhisperTokenizer tokenizer_;
  GraphWhisperRunner runner_;
  int max_sequences_;
  std::mutex turn_;
};

}  // namespace rayo::whisper
