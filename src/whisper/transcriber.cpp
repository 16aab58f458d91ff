#include "whisper/transcriber.h"

#include "audio/log_mel.h"
#include "audio/mel_source.h"
#include "common/error.h"
#include "whisper/whisper_loader.h"

namespace rayo::whisper {

Transcriber::Transcriber(const std::string& model, const GraphRunnerOptions& options)
    : files_(load_whisper(model)),
      tokenizer_(WhisperTokenizer::from_files(files_)),
      runner_(files_, options),
      max_sequences_(options.max_sequences) {}

void Transcriber::check(const TranscribeOptions& options) const {
  if (options.beam_size > max_sequences_ || options.best_of > max_sequences_)
    fail("a beam size or best_of of at most ", max_sequences_, " (this model was loaded for that many sequences)");
}

Transcript Transcriber::transcribe(std::span<const float> samples, const TranscribeOptions& options) {
  check(options);
  const audio::LogMel mel =
      audio::LogMelSpectrogram(static_cast<int>(files_.spec.n_mels)).compute({samples.data(), samples.size()});
  std::lock_guard turn(turn_);
  return whisper::transcribe(runner_, tokenizer_, mel, options);
}

Transcript Transcriber::transcribe(const AudioInput& audio, const TranscribeOptions& options) {
  check(options);
  auto stream = audio.open();
  if (stream->declared_seconds() < kStreamFromSeconds) return transcribe(audio::read_all(*stream, audio.name), options);
  audio::StreamingMel mel(std::move(stream), audio.open, static_cast<int>(files_.spec.n_mels));
  std::lock_guard turn(turn_);
  return whisper::transcribe(runner_, tokenizer_, mel, options);
}

}  // namespace rayo::whisper
