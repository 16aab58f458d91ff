#pragma once
// Whisper's tokens as faster-whisper's Tokenizer (faster_whisper/tokenizer.py)
// sees them: GPT-2's byte-level BPE for text, special tokens after
// <|endoftext|> (start of transcript, languages, tasks, <|notimestamps|>),
// then one timestamp token per 0.02 s from <|0.00|> to <|30.00|>.
//
// Decoding ids to text needs only vocabulary.txt (each token's text is its
// bytes spelled with GPT-2's byte <-> Unicode map). Encoding text (an initial
// prompt, the symbols whose tokens non_speech_tokens() suppresses) needs the
// BPE merges too, which CTranslate2 folders keep in tokenizer.json; rayo's
// byte-level BPE tokenizer (tokenizer/) does the merging.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "whisper/whisper_spec.h"

namespace rayo::whisper {

// Seconds per timestamp token, and per mel frame (hop 160 at 16 kHz).
inline constexpr double kTimePrecision = 0.02;
inline constexpr double kSecondsPerFrame = 0.01;

class WhisperTokenizer {
 public:
  // merges: GPT-2 merges "left right" in rank order; empty gives a tokenizer
  // that decodes but refuses to encode (can_encode() is false).
  WhisperTokenizer(const WhisperSpec& spec, std::vector<std::string> vocabulary, std::vector<std::string> merges = {});

  // The tokenizer of a loaded model (its merges when it has them).
  static WhisperTokenizer from_files(const WhisperFiles& files);

  const WhisperSpec& spec() const { return spec_; }
  int32_t vocabulary_size() const { return static_cast<int32_t>(vocabulary_.size()); }
  // Multilingual models have 51865 tokens or more (large-v3: 51866), English-only
  // ones 51864, as CTranslate2 decides it (config.json lists language ids for both).
  bool multilingual() const { return vocabulary_.size() >= 51865; }
  bool can_encode() const { return bpe_.has_value(); }

  // The UTF-8 text of the text tokens among ids (those before <|endoftext|>;
  // special and timestamp tokens are skipped), bytes that are not valid UTF-8
  // replaced by U+FFFD, as the `tokenizers` library decodes.
  std::string decode(std::span<const int32_t> ids) const;
  // The same with timestamps written as "<|1.23|>" where they stand.
  std::string decode_with_timestamps(std::span<const int32_t> ids) const;

  // Token ids of text, no special tokens added (special tokens written in the text
  // are matched, as `tokenizers` does). Throws rayo::Error without merges.
  std::vector<int32_t> encode(std::string_view text) const;

  // The token whose text is exactly `text` ("<|en|>"), or -1.
  int32_t token_id(std::string_view text) const;
  const std::string& token_text(int32_t id) const;  // as stored (byte-level spelling)

  // <|startoftranscript|>, then for multilingual models the language and the
  // task tokens. English-only models take neither (faster-whisper's rule).
  // Throws rayo::Error for an unknown language code or task.
  std::vector<int32_t> sot_sequence(std::string_view language, std::string_view task) const;

  // "en" <-> <|en|>; -1 / "" when the model has no such language token.
  int32_t language_token(std::string_view code) const;
  std::string language_code(int32_t token) const;
  // Whisper's language codes in its LANGUAGES order (token order after <|startoftranscript|>).
  static const std::vector<std::string_view>& language_codes();
  // The language tokens the model has, in token order.
  std::vector<int32_t> language_tokens() const;

  bool is_timestamp(int32_t id) const { return id >= spec_.timestamp_begin; }
  double timestamp_seconds(int32_t id) const { return (id - spec_.timestamp_begin) * kTimePrecision; }
  int32_t timestamp_token(double seconds) const;  // nearest, clamped to the timestamps the model has

  // The tokens that spell speaker tags and non-speech annotations ("♪", "[", "(("),
  // computed as faster-whisper's non_speech_tokens (needs merges).
  std::vector<int32_t> non_speech_tokens() const;

  // faster-whisper's get_suppressed_tokens: -1 in `requested` stands for
  // non_speech_tokens() (for config.json's suppress_ids when there are no merges to
  // compute them with); the task and start tokens are always added. Sorted, unique.
  std::vector<int32_t> suppressed_tokens(std::span<const int32_t> requested) const;

 private:
  WhisperSpec spec_;
  std::vector<std::string> vocabulary_;
  std::unordered_map<std::string, int32_t> special_ids_;  // "<|...|>" tokens by text
  std::optional<tokenizer::Tokenizer> bpe_;
};

// The merges that rebuild a ranked byte-level vocabulary (GPT-2's, as tiktoken
// ranks it: a token's id is its rank), the way tiktoken's vocabularies are
// turned into merge lists: for each token of two bytes or more, in rank order,
// byte-pair merging of its bytes with the lower-ranked tokens alone leaves two
// pieces, and these two are its merge. `vocabulary` holds byte-level spellings;
// the first `n_ordinary` ids take part (the special tokens come after them).
std::vector<std::string> merges_from_ranks(const std::vector<std::string>& vocabulary, size_t n_ordinary);

// The BPE merges of a `tokenizers` tokenizer.json ("left right" strings or
// ["left", "right"] pairs), in rank order. Throws rayo::Error naming the file.
std::vector<std::string> read_tokenizer_json_merges(const std::string& path);

}  // namespace rayo::whisper
