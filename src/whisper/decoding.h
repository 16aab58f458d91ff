#pragma once
// Decoding one 30-second window, as faster-whisper asks CTranslate2 4.x's
// WhisperModel.generate for it: greedy search, beam search (patience, length
// penalty) or random sampling of best_of candidates at a temperature, with
// Whisper's logits rules applied at every step, in CTranslate2's order:
//   1. suppress_tokens are never generated;
//   2. suppress_blank: config.json's suppress_ids_begin (" " and <|endoftext|>)
//      are not generated at the first step;
//   3. timestamp rules (unless the prompt ends with <|notimestamps|>):
//      <|notimestamps|> never; the first token is a timestamp no later than
//      max_initial_timestamp; timestamps come in pairs (after a lone timestamp
//      a timestamp or <|endoftext|>, after a pair text); timestamps never
//      decrease; and where the timestamps together are likelier than any single
//      text token, a timestamp is forced.
// Disabled tokens get the lowest float as their logit, as CTranslate2 does.
//
// The window must already be encoded (WhisperRunner::encode); decode_window
// only calls WhisperRunner::decode, so the fallback loop (transcribe.h) can
// decode one window several times at several temperatures.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "whisper/whisper_runner.h"

namespace rayo::whisper {

struct DecodeOptions {
  int beam_size = 5;            // 1: greedy
  float patience = 1.0f;        // beam search stops after round(beam_size * patience) finished hypotheses
  float length_penalty = 1.0f;  // hypotheses are ranked by sum_logprob / length^length_penalty
  // Above 0: best_of candidates sampled at this temperature (beam_size is not used),
  // the one with the best score returned.
  float temperature = 0.0f;
  int best_of = 5;
  // Ids never generated; -1 stands for config.json's suppress_ids (CTranslate2's rule).
  std::vector<int32_t> suppress_tokens = {-1};
  bool suppress_blank = true;
  double max_initial_timestamp = 1.0;  // seconds; the first timestamp is at most round(this / 0.02) steps
  // The prompt's tokens and the generated ones together (faster-whisper's max_length,
  // the decoder's 448 positions): at most min(max_length / 2, max_length - prompt + 1)
  // tokens are generated, as CTranslate2 counts them.
  int max_length = 448;
};

struct DecodeResult {
  std::vector<int32_t> tokens;  // generated, without the <|endoftext|> that ended them
  double sum_logprob = 0;       // of the tokens and of the <|endoftext|>, when one ended them
  double score = 0;             // CTranslate2's score: sum_logprob / length^length_penalty
  // faster-whisper's avg_logprob: sum_logprob / (length + 1). (faster-whisper recovers it
  // from score, which gives NaN for an empty result; this stays finite.)
  double avg_logprob = 0;
  double no_speech_prob = 0;    // softmax at <|startoftranscript|>, of <|nospeech|>
};

// Decodes after `prompt`: [<|startofprev|> previous text...] <|startoftranscript|>
// [language task] [<|notimestamps|>]. Throws rayo::Error for a prompt without
// <|startoftranscript|>, with tokens after its sequence, or too long to decode after.
DecodeResult decode_window(WhisperRunner& runner, std::span<const int32_t> prompt, const DecodeOptions& options,
                           std::mt19937_64& rng);

// Log-probabilities of the next token after `generated` (the tokens decoded so far
// after the prompt), the rules above applied to `logits` in place. Public for tests.
struct StepRules {
  const WhisperSpec* spec = nullptr;
  std::vector<int32_t> suppress;        // resolved: -1 replaced by config's list
  std::vector<int32_t> suppress_begin;  // empty unless suppress_blank
  bool timestamps = false;
  int32_t max_initial_timestamp_id = 0;
  int32_t vocabulary_size = 0;          // timestamps run to its last token

  StepRules(const WhisperSpec& spec, const DecodeOptions& options, bool timestamps, int32_t vocabulary_size);
  void apply(std::span<float> logits, std::span<const int32_t> generated) const;
};

// log(softmax(logits)), in place.
void log_softmax(std::span<float> values);

}  // namespace rayo::whisper
