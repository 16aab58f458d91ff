#include "whisper/whisper_tokenizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/error.h"
#include "tokenizer/byte_encoding.h"
#include "tokenizer/utf8.h"

namespace rayo::whisper {
namespace {

// Appends `bytes` to out as UTF-8 with each maximal ill-formed subsequence
// replaced by one U+FFFD: Rust's String::from_utf8_lossy, which the `tokenizers`
// library's byte-level decoder uses (so half a character at a segment's end
// gives one replacement character, as in faster-whisper's texts).
void append_lossy_utf8(std::string& out, std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    if (b < 0x80) {
      out += static_cast<char>(b);
      ++i;
      continue;
    }
    size_t length = 0;
    uint8_t second_lo = 0x80, second_hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      length = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      length = 3;
      if (b == 0xE0) second_lo = 0xA0;
      if (b == 0xED) second_hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      length = 4;
      if (b == 0xF0) second_lo = 0x90;
      if (b == 0xF4) second_hi = 0x8F;
    }
    size_t valid = length ? 1 : 0;  // bytes of a well-formed prefix
    while (valid && valid < length && i + valid < bytes.size()) {
      const auto c = static_cast<uint8_t>(bytes[i + valid]);
      const uint8_t lo = valid == 1 ? second_lo : 0x80, hi = valid == 1 ? second_hi : 0xBF;
      if (c < lo || c > hi) break;
      ++valid;
    }
    if (length && valid == length) {
      out.append(bytes.substr(i, length));
      i += length;
    } else {
      tokenizer::append_utf8(out, tokenizer::kReplacementChar);
      i += std::max<size_t>(valid, 1);
    }
  }
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

WhisperTokenizer::WhisperTokenizer(const WhisperSpec& spec, std::vector<std::string> vocabulary,
                                   std::vector<std::string> merges)
    : spec_(spec), vocabulary_(std::move(vocabulary)) {
  if (spec_.eot < 0 || spec_.sot < 0 || spec_.timestamp_begin <= spec_.eot ||
      spec_.timestamp_begin >= static_cast<int32_t>(vocabulary_.size()))
    fail("Whisper tokenizer: the special tokens do not fit the vocabulary of ", vocabulary_.size(), " tokens");
  for (size_t i = spec_.eot; i < vocabulary_.size(); ++i)
    if (vocabulary_[i].size() > 4 && vocabulary_[i].starts_with("<|") && vocabulary_[i].ends_with("|>"))
      special_ids_.emplace(vocabulary_[i], static_cast<int32_t>(i));
  if (!merges.empty()) {
    tokenizer::TokenizerSpec t;
    t.model = "gpt2";
    t.pre = "gpt-2";  // GPT-2's pre-tokenizer regex, which Whisper's ByteLevel pre-tokenizer uses
    t.tokens = vocabulary_;
    t.merges = std::move(merges);
    // Specials are control tokens: matched in text only where encode() asks for it.
    t.token_types.assign(vocabulary_.size(), 1);
    for (size_t i = spec_.eot; i < vocabulary_.size(); ++i) t.token_types[i] = 3;
    t.add_bos = false;
    t.add_eos = false;
    bpe_ = tokenizer::Tokenizer::from_spec(t);
  }
}

WhisperTokenizer WhisperTokenizer::from_files(const WhisperFiles& files) {
  return WhisperTokenizer(files.spec, files.vocabulary, files.merges);
}

std::vector<std::string> merges_from_ranks(const std::vector<std::string>& vocabulary, size_t n_ordinary) {
  n_ordinary = std::min(n_ordinary, vocabulary.size());
  std::vector<std::string> raw(n_ordinary);
  std::unordered_map<std::string_view, size_t> rank;
  for (size_t id = 0; id < n_ordinary; ++id) {
    raw[id] = tokenizer::decode_bytes(vocabulary[id]);
    if (!raw[id].empty()) rank.emplace(raw[id], id);  // the first of equal tokens keeps its rank
  }
  std::vector<std::string> merges;
  std::vector<std::string_view> pieces;
  for (size_t id = 0; id < n_ordinary; ++id) {
    const std::string_view token = raw[id];
    if (token.size() < 2 || rank.at(token) != id) continue;
    pieces.clear();
    for (size_t i = 0; i < token.size(); ++i) pieces.push_back(token.substr(i, 1));
    // Merge the adjacent pair whose union ranks lowest, among ranks below id,
    // until none is left: tiktoken's byte-pair merge stopped at this rank.
    while (pieces.size() > 2) {
      size_t best = pieces.size(), best_rank = id;
      for (size_t i = 0; i + 1 < pieces.size(); ++i) {
        const std::string_view pair(pieces[i].data(), pieces[i].size() + pieces[i + 1].size());
        const auto it = rank.find(pair);
        if (it != rank.end() && it->second < best_rank) {
          best = i;
          best_rank = it->second;
        }
      }
      if (best == pieces.size()) break;
      pieces[best] = std::string_view(pieces[best].data(), pieces[best].size() + pieces[best + 1].size());
      pieces.erase(pieces.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    }
    // A token no two lower-ranked ones make is not a merge's result (it cannot be produced).
    if (pieces.size() != 2 || !rank.count(pieces[0]) || !rank.count(pieces[1])) continue;
    merges.push_back(tokenizer::encode_bytes(pieces[0]) + " " + tokenizer::encode_bytes(pieces[1]));
  }
  return merges;
}

std::vector<std::string> read_tokenizer_json_merges(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_whole_file(path));
  } catch (const nlohmann::json::exception& e) {
    fail(path, ": not valid JSON (", e.what(), ")");
  }
  const auto model = j.find("model");
  if (model == j.end() || !model->is_object() || !model->contains("merges") || !(*model)["merges"].is_array())
    fail(path, ": no model.merges list (not a BPE tokenizer.json)");
  std::vector<std::string> merges;
  for (const auto& m : (*model)["merges"]) {
    if (m.is_string()) {
      merges.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());  // tokenizers >= 0.20
    } else {
      fail(path, ": merge ", merges.size(), " is neither \"left right\" nor [left, right]");
    }
  }
  return merges;
}

std::string WhisperTokenizer::decode(std::span<const int32_t> ids) const {
  std::string bytes;
  for (const int32_t id : ids) {
    if (id < 0 || id >= spec_.eot) continue;
    bytes += tokenizer::decode_bytes(vocabulary_[id]);
  }
  std::string out;
  append_lossy_utf8(out, bytes);
  return out;
}

std::string WhisperTokenizer::decode_with_timestamps(std::span<const int32_t> ids) const {
  std::string out;
  size_t run_start = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    if (i < ids.size() && !is_timestamp(ids[i])) continue;
    out += decode(ids.subspan(run_start, i - run_start));
    if (i < ids.size()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "<|%.2f|>", timestamp_seconds(ids[i]));
      out += buf;
    }
    run_start = i + 1;
  }
  return out;
}

std::vector<int32_t> WhisperTokenizer::encode(std::string_view text) const {
  if (!bpe_) fail("Whisper tokenizer: encoding text needs the BPE merges (tokenizer.json is missing)");
  return bpe_->encode(text, /*add_special=*/false, /*parse_special=*/true);
}

int32_t WhisperTokenizer::token_id(std::string_view text) const {
  if (const auto it = special_ids_.find(std::string(text)); it != special_ids_.end()) return it->second;
  for (size_t i = 0; i < static_cast<size_t>(spec_.eot) && i < vocabulary_.size(); ++i)
    if (vocabulary_[i] == text) return static_cast<int32_t>(i);
  return -1;
}

const std::string& WhisperTokenizer::token_text(int32_t id) const {
  RAYO_CHECK(id >= 0 && id < vocabulary_size(), "token id ", id);
  return vocabulary_[id];
}

const std::vector<std::string_view>& WhisperTokenizer::language_codes() {
  static const std::vector<std::string_view> codes = {
      "en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "tr", "pl", "ca", "nl", "ar", "sv", "it", "id",
      "hi", "fi", "vi", "he", "uk", "el", "ms", "cs", "ro", "da", "hu", "ta", "no", "th", "ur", "hr", "bg",
      "lt", "la", "mi", "ml", "cy", "sk", "te", "fa", "lv", "bn", "sr", "az", "sl", "kn", "et", "mk", "br",
      "eu", "is", "hy", "ne", "mn", "bs", "kk", "sq", "sw", "gl", "mr", "pa", "si", "km", "sn", "yo", "so",
      "af", "oc", "ka", "be", "tg", "sd", "gu", "am", "yi", "lo", "uz", "fo", "ht", "ps", "tk", "nn", "mt",
      "sa", "lb", "my", "bo", "tl", "mg", "as", "tt", "haw", "ln", "ha", "ba", "jw", "su", "yue"};
  return codes;
}

namespace {
// Some converted vocabularies spell Hebrew with its old code (tiny.en's has <|iw|>).
constexpr std::string_view kHebrew = "he", kHebrewOld = "iw";

std::string special_text(std::string_view name) {
  std::string text = "<|";
  text += name;
  text += "|>";
  return text;
}
}  // namespace

int32_t WhisperTokenizer::language_token(std::string_view code) const {
  const int32_t id = token_id(special_text(code));
  if (id < 0 && code == kHebrew) return token_id(special_text(kHebrewOld));
  return id;
}

std::string WhisperTokenizer::language_code(int32_t token) const {
  if (token < spec_.eot || token >= vocabulary_size()) return "";
  const std::string& text = vocabulary_[token];
  if (text.size() < 5 || !text.starts_with("<|") || !text.ends_with("|>")) return "";
  std::string code = text.substr(2, text.size() - 4);
  if (code == kHebrewOld) code = kHebrew;
  const auto& codes = language_codes();
  return std::find(codes.begin(), codes.end(), code) != codes.end() ? code : "";
}

std::vector<int32_t> WhisperTokenizer::language_tokens() const {
  std::vector<int32_t> ids;
  for (const auto code : language_codes())
    if (const int32_t id = language_token(code); id >= 0) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<int32_t> WhisperTokenizer::sot_sequence(std::string_view language, std::string_view task) const {
  if (task != "transcribe" && task != "translate")
    fail("unknown task '", task, "' (Whisper's tasks are transcribe and translate)");
  std::vector<int32_t> sequence = {spec_.sot};
  if (!multilingual()) return sequence;
  const int32_t lang = language_token(language);
  if (language.empty() || lang < 0 || language_code(lang).empty())
    fail("unknown language '", language, "' (a Whisper language code such as en, de, fr)");
  sequence.push_back(lang);
  sequence.push_back(task == "translate" ? spec_.translate : spec_.transcribe);
  return sequence;
}

int32_t WhisperTokenizer::timestamp_token(double seconds) const {
  const int32_t last = vocabulary_size() - 1 - spec_.timestamp_begin;
  const auto index = static_cast<int32_t>(std::lround(std::max(0.0, seconds) / kTimePrecision));
  return spec_.timestamp_begin + std::min(index, last);
}

std::vector<int32_t> WhisperTokenizer::non_speech_tokens() const {
  // faster-whisper's lists, symbol for symbol: single characters, then
  // sequences that are one token in some vocabularies.
  const std::vector<std::string> symbols = {
      "\"", "#", "(", ")", "*", "+", "/", ":", ";", "<", "=", ">", "@", "[", "\\", "]", "^", "_", "`",
      "{", "|", "}", "~", "「", "」", "『", "』", "<<", ">>", "<<<", ">>>", "--", "---", "-(", "-[",
      "('", "(\"", "((", "))", "(((", ")))", "[[", "]]", "{{", "}}", "♪♪", "♪♪♪"};
  // U+2640..U+267F symbols share their first two UTF-8 bytes, so suppressing
  // the first token of a multi-token spelling is safe.
  const std::vector<std::string> miscellaneous = {"♩", "♪", "♫", "♬", "♭", "♮", "♯"};
  std::set<int32_t> result = {encode(" -").at(0), encode(" '").at(0)};
  auto add = [&](const std::string& symbol, bool first_token_enough) {
    for (const std::string& text : {symbol, " " + symbol}) {
      const auto tokens = encode(text);
      if (tokens.size() == 1 || (first_token_enough && !tokens.empty())) result.insert(tokens[0]);
    }
  };
  for (const auto& s : symbols) add(s, false);
  for (const auto& s : miscellaneous) add(s, true);
  return {result.begin(), result.end()};
}

std::vector<int32_t> WhisperTokenizer::suppressed_tokens(std::span<const int32_t> requested) const {
  // An empty request means no suppression at all: faster-whisper passes it through unchanged.
  if (requested.empty()) return {};
  std::set<int32_t> ids;
  bool defaults = false;
  for (const int32_t id : requested) {
    if (id >= 0)
      ids.insert(id);
    else if (id == -1)
      defaults = true;
  }
  if (defaults) {
    if (can_encode()) {
      for (const int32_t id : non_speech_tokens()) ids.insert(id);
    } else {
      ids.insert(spec_.suppress_ids.begin(), spec_.suppress_ids.end());  // the converter's own list
    }
  }
  for (const int32_t id : {spec_.transcribe, spec_.translate, spec_.sot, spec_.sot_prev, spec_.sot_lm, spec_.no_speech})
    if (id >= 0) ids.insert(id);
  return {ids.begin(), ids.end()};
}

}  // namespace rayo::whisper
