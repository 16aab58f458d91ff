#pragma once
// What Whisper's decoding needs from a model, whatever runs it (the CPU or a
// GPU backend): encode one 30-second window, then the next-token logits of
// token sequences that read that window through cross-attention.
//
// The decoding rules (whisper/decoding.h) talk only to this interface, so they
// are the same on every backend; a runner keeps each sequence's self-attention
// keys and values between calls and computes only the tokens a sequence adds.
#include <cstdint>
#include <span>
#include <vector>

#include "whisper/whisper_spec.h"

namespace rayo::whisper {

class WhisperRunner {
 public:
  virtual ~WhisperRunner() = default;

  virtual const WhisperSpec& spec() const = 0;

  // Encodes one window: n_mels x 3000 log-mel values, mel-major
  // (audio::mel_window). The decode() calls that follow read this window.
  virtual void encode(std::span<const float> mel) = 0;

  // The logits after the last token of each sequence: sequences.size() rows
  // of n_vocab floats, in order, into `logits` (resized). Every sequence must
  // be non-empty and at most n_text_ctx tokens. Calls usually pass the
  // previous call's sequences (or some of them, beam search) each extended by
  // a token, and the runner computes only the new tokens; any sequences work.
  //
  // With extra_position >= 0, *extra_logits (resized) also gets the logits
  // after token extra_position of sequences[0]: the start-of-transcript
  // position of the first step, where Whisper reads the no-speech probability.
  virtual void decode(std::span<const std::vector<int32_t>> sequences, std::vector<float>& logits,
                      int32_t extra_position = -1, std::vector<float>* extra_logits = nullptr) = 0;
};

}  // namespace rayo::whisper
