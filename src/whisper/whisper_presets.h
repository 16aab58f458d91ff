#pragma once
// The real Whisper models' sizes and vocabularies, for `rayo synth --whisper`
// (random weights of the real shapes, for benchmarks and loader tests) and for
// tests that need a multilingual or 128-mel model no one has to download.
//
// Where the special tokens sit follows from two facts about a model: its base
// vocabulary (GPT-2's 50256 byte-level tokens for the English-only models,
// 50257 for the multilingual ones) and how many language tokens it has (99;
// 100 from large-v3, which adds <|yue|>). Then come, in this order,
// <|endoftext|> <|startoftranscript|> <|LANG|>... <|translate|> <|transcribe|>
// <|startoflm|> <|startofprev|> <|nocaptions|> <|notimestamps|> and the 1501
// timestamps <|0.00|> ... <|30.00|>, as openai-whisper's tokenizer and the
// Hugging Face vocabularies CTranslate2 converts have them. So tiny.en has
// 51864 tokens, tiny ... medium 51865, large-v3 51866.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rayo::whisper {

struct WhisperLanguage {
  std::string_view code, name;  // "en", "english"
};
// openai-whisper's LANGUAGES in their order, which is the language tokens'
// order: <|en|> first, <|yue|> (large-v3 only) last. (Hebrew, "he" here, is
// <|iw|> in the vocabularies faster-whisper's users have.)
std::span<const WhisperLanguage> whisper_languages();
// "english" for "en"; empty for a code Whisper does not know.
std::string_view whisper_language_name(std::string_view code);

// Special token ids of a Whisper vocabulary (see the header comment).
struct WhisperVocabularyLayout {
  bool english_only = true;
  uint32_t n_languages = 99;
  // The no-speech token's text: "<|nocaptions|>" up to large-v2, "<|nospeech|>" in large-v3's vocabulary.
  std::string_view no_speech_text = "<|nocaptions|>";

  int32_t eot() const { return english_only ? 50256 : 50257; }  // the base vocabulary's size
  int32_t sot() const { return eot() + 1; }
  int32_t first_language() const { return eot() + 2; }  // <|en|>
  int32_t translate() const { return first_language() + static_cast<int32_t>(n_languages); }
  int32_t transcribe() const { return translate() + 1; }
  int32_t sot_lm() const { return translate() + 2; }
  int32_t sot_prev() const { return translate() + 3; }
  int32_t no_speech() const { return translate() + 4; }
  int32_t no_timestamps() const { return translate() + 5; }
  int32_t timestamp_begin() const { return translate() + 6; }  // <|0.00|>
  static constexpr int32_t kTimestamps = 1501;                 // <|0.00|> ... <|30.00|>, 0.02 s apart
  uint32_t n_vocab() const { return static_cast<uint32_t>(timestamp_begin() + kTimestamps); }

  // The lists faster-whisper's config.json holds (CTranslate2's converter copies
  // them from the Hugging Face generation config): tokens never generated (the
  // tokenizer's non-speech symbols and the task/control tokens), tokens not
  // generated first (a blank and <|endoftext|>), and the language tokens. The
  // English-only models' list of languages leaves out <|en|>, as their converted
  // config.json does.
  std::vector<int32_t> suppress_ids() const;
  std::vector<int32_t> suppress_ids_begin() const;
  std::vector<int32_t> lang_ids() const;
};

struct WhisperPreset {
  std::string_view name;  // "tiny.en", "large-v3", ...
  uint32_t n_mels = 80;
  uint32_t n_state = 0;  // width of the encoder and the decoder alike
  uint32_t n_head = 0;   // per attention, in both stacks
  uint32_t n_layer = 0;  // blocks in each stack
  uint32_t n_audio_ctx = 1500;  // encoder positions (30 s after the stride-2 convolution)
  uint32_t n_text_ctx = 448;
  WhisperVocabularyLayout vocabulary;
  // (decoder layer, head) pairs whose cross-attention follows the words in time
  // (openai-whisper's _ALIGNMENT_HEADS, decoded).
  std::vector<std::pair<int32_t, int32_t>> alignment_heads;
  // Decoder blocks where they differ from the encoder's (distil-whisper: 2); 0: n_layer.
  uint32_t n_text_layer = 0;

  uint32_t n_ffn() const { return 4 * n_state; }
  uint32_t decoder_layers() const { return n_text_layer != 0 ? n_text_layer : n_layer; }
};

// tiny, tiny.en, base, base.en, small, small.en, medium, medium.en, large-v3.
const std::vector<WhisperPreset>& whisper_presets();
// The preset of that name; throws a one-line rayo::Error listing the names otherwise.
const WhisperPreset& whisper_preset(std::string_view name);
// "tiny|tiny.en|..." for help texts and errors.
std::string whisper_preset_names(std::string_view separator = "|");

}  // namespace rayo::whisper
