#pragma once
// A Whisper model's hyperparameters and special tokens, read from a
// CTranslate2 folder as faster-whisper's users have it: the sizes from
// model.bin's variables (any size from tiny to large-v3, English-only or
// multilingual, 80 or 128 mel bins), the decoding lists from config.json
// (suppressed tokens, alignment heads, language ids), the vocabulary from
// vocabulary.json or vocabulary.txt (the byte-level BPE tokens in id order: a
// JSON list, as CTranslate2 4 writes it, or one a line, as older versions did).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "whisper/ct2_model.h"

namespace rayo::whisper {

struct WhisperSpec {
  uint32_t n_mels = 0;         // encoder/conv1/weight [state, mels, 3]
  uint32_t n_audio_ctx = 0;    // encoder positions (1500 for 30 s)
  uint32_t n_audio_state = 0;
  uint32_t n_audio_head = 0;
  uint32_t n_audio_layer = 0;
  uint32_t n_text_ctx = 0;     // decoder positions (448)
  uint32_t n_text_state = 0;
  uint32_t n_text_head = 0;
  uint32_t n_text_layer = 0;
  uint32_t n_vocab = 0;
  uint32_t n_ffn = 0;          // the feed-forward width (4 x state)

  // config.json (faster-whisper's): tokens never generated, tokens not at the
  // first step, (layer, head) pairs for word timestamps, language token ids.
  std::vector<int32_t> suppress_ids, suppress_ids_begin;
  std::vector<std::pair<int32_t, int32_t>> alignment_heads;
  std::vector<int32_t> lang_ids;

  // Special tokens, by their text in the vocabulary.
  int32_t eot = -1, sot = -1, sot_prev = -1, sot_lm = -1, no_speech = -1, no_timestamps = -1;
  int32_t translate = -1, transcribe = -1;
  int32_t timestamp_begin = -1;  // <|0.00|>; timestamps step by 0.02 s up to <|30.00|>

  // As CTranslate2 and openai-whisper decide it: English-only models have 51 864
  // tokens (their config.json may still list the language ids).
  bool multilingual() const { return n_vocab >= 51865; }
};

// A Whisper model as rayo runs it, whichever file it came from: CTranslate2's
// variables, the spec, the vocabulary and, when known, the BPE merges.
struct WhisperFiles {
  Ct2Model model;
  WhisperSpec spec;
  std::vector<std::string> vocabulary;  // id -> byte-level BPE text
  // GPT-2 merges "left right" in rank order: the folder's tokenizer.json, or
  // derived from a whisper.cpp file's ranked vocabulary; empty when neither
  // (the tokenizer then decodes but does not encode).
  std::vector<std::string> merges;
};
// Reads the folder (model.bin, config.json, vocabulary.json or .txt, and tokenizer.json
// when it is there). Throws rayo::Error naming the file and what is wrong: a
// missing file, a model that is not a Whisper model, sizes that do not agree
// with each other.
WhisperFiles load_ct2_whisper(const std::string& folder);

// The spec of a model whose vocabulary and config are given (tests).
WhisperSpec whisper_spec(const Ct2Model& model, std::string_view config_json, const std::vector<std::string>& vocabulary,
                         const std::string& where);

}  // namespace rayo::whisper
