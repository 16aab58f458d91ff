#include "whisper/transcript_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "whisper/whisper_presets.h"

namespace rayo::whisper {
namespace {

// The code points Python's str.isspace() accepts (what str.strip() removes).
bool is_python_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

// The code point of the well-formed UTF-8 sequence s[at, at+length), or
// UINT32_MAX when it is not one (stray bytes are never whitespace).
uint32_t code_point(std::string_view s, size_t at, size_t length) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[at + i]); };
  if (length == 1) return byte(0) < 0x80 ? byte(0) : UINT32_MAX;
  uint32_t c = byte(0) & (0x7f >> length);
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return UINT32_MAX;
    c = (c << 6) | (byte(i) & 0x3f);
  }
  return c;
}

size_t sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xe0) == 0xc0) return 2;
  if ((lead & 0xf0) == 0xe0) return 3;
  if ((lead & 0xf8) == 0xf0) return 4;
  return 1;  // a stray byte: treated as one non-space character
}

// Python's str.replace(old, new): left to right, occurrences that do not overlap.
std::string replace_all(std::string_view s, std::string_view old, std::string_view replacement) {
  std::string out;
  size_t from = 0;
  for (size_t at; (at = s.find(old, from)) != std::string_view::npos; from = at + old.size()) {
    out.append(s.substr(from, at - from));
    out.append(replacement);
  }
  out.append(s.substr(from));
  return out;
}

// A segment's text as a subtitle cue carries it (whisper/utils.py SubtitlesWriter.iterate_result).
std::string cue_text(const Segment& s) { return replace_all(strip_whitespace(s.text), "-->", "->"); }

std::string subtitles(const Transcript& t, TranscriptFormat format) {
  const bool srt = format == TranscriptFormat::Srt;
  // WriteSRT: always hours, ','; WriteVTT: hours only past an hour, '.'.
  const auto stamp = [&](double seconds) { return format_timestamp(seconds, srt, srt ? ',' : '.'); };
  std::string out = srt ? "" : "WEBVTT\n\n";
  int number = 1;
  for (const Segment& s : t.segments) {
    if (srt) out += std::to_string(number++) + "\n";
    out += stamp(s.start) + " --> " + stamp(s.end) + "\n" + cue_text(s) + "\n\n";
  }
  return out;
}

// Decoded text may end inside a multi-byte character at a window's edge; JSON
// must be UTF-8, so such bytes become U+FFFD, as Python's decode(errors="replace") gives.
std::string dump(const nlohmann::ordered_json& j) {
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string verbose_json(const Transcript& t) {
  nlohmann::ordered_json segments = nlohmann::ordered_json::array();
  for (const Segment& s : t.segments) {
    segments.push_back({{"id", s.id},
                        {"seek", s.seek},
                        {"start", s.start},
                        {"end", s.end},
                        {"text", s.text},
                        {"tokens", s.tokens},
                        {"temperature", s.temperature},
                        {"avg_logprob", s.avg_logprob},
                        {"compression_ratio", s.compression_ratio},
                        {"no_speech_prob", s.no_speech_prob}});
  }
  // The API names the language ("english"), as openai-whisper's LANGUAGES does.
  const std::string_view name = whisper_language_name(t.language);
  return dump({{"task", t.task},
               {"language", name.empty() ? t.language : std::string(name)},
               {"duration", t.duration},
               {"text", t.text()},
               {"segments", std::move(segments)}});
}

}  // namespace

std::string_view strip_whitespace(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end) {
    const size_t n = std::min(sequence_length(static_cast<uint8_t>(text[begin])), end - begin);
    if (!is_python_space(code_point(text, begin, n))) break;
    begin += n;
  }
  while (end > begin) {
    size_t start = end - 1;  // back over continuation bytes to the character's first byte
    while (start > begin && end - start < 4 && (static_cast<uint8_t>(text[start]) & 0xc0) == 0x80) --start;
    if (sequence_length(static_cast<uint8_t>(text[start])) != end - start) start = end - 1;
    if (!is_python_space(code_point(text, start, end - start))) break;
    end = start;
  }
  return text.substr(begin, end - begin);
}

std::string format_timestamp(double seconds, bool always_include_hours, char decimal_marker) {
  // std::nearbyint rounds half to even in the default rounding mode, like Python's round().
  const int64_t total_ms = seconds > 0 ? static_cast<int64_t>(std::nearbyint(seconds * 1000.0)) : 0;
  const int64_t hours = total_ms / 3'600'000;
  const int64_t minutes = total_ms / 60'000 % 60;
  const int64_t secs = total_ms / 1'000 % 60;
  const int64_t ms = total_ms % 1'000;
  char buf[64];
  if (always_include_hours || hours > 0)
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld%c%03lld", static_cast<long long>(hours),
                  static_cast<long long>(minutes), static_cast<long long>(secs), decimal_marker,
                  static_cast<long long>(ms));
  else
    std::snprintf(buf, sizeof buf, "%02lld:%02lld%c%03lld", static_cast<long long>(minutes),
                  static_cast<long long>(secs), decimal_marker, static_cast<long long>(ms));
  return buf;
}

TranscriptFormat parse_transcript_format(std::string_view name) {
  if (name == "txt" || name == "text") return TranscriptFormat::Text;
  if (name == "srt") return TranscriptFormat::Srt;
  if (name == "vtt") return TranscriptFormat::Vtt;
  if (name == "json") return TranscriptFormat::Json;
  if (name == "verbose_json") return TranscriptFormat::VerboseJson;
  fail("unknown output format ", quote_for_message(name), " (valid: txt, text, srt, vtt, json, verbose_json)");
}

std::string_view transcript_format_name(TranscriptFormat format) {
  switch (format) {
    case TranscriptFormat::Text: return "txt";
    case TranscriptFormat::Srt: return "srt";
    case TranscriptFormat::Vtt: return "vtt";
    case TranscriptFormat::Json: return "json";
    case TranscriptFormat::VerboseJson: return "verbose_json";
  }
  return "?";
}

std::string_view transcript_content_type(TranscriptFormat format) {
  switch (format) {
    case TranscriptFormat::Json:
    case TranscriptFormat::VerboseJson: return "application/json";
    case TranscriptFormat::Text:
    case TranscriptFormat::Srt:
    case TranscriptFormat::Vtt: return "text/plain; charset=utf-8";  // as the OpenAI API serves them
  }
  return "text/plain; charset=utf-8";
}

std::string format_transcript(const Transcript& transcript, TranscriptFormat format) {
  switch (format) {
    case TranscriptFormat::Text: return transcript.text() + "\n";
    case TranscriptFormat::Srt:
    case TranscriptFormat::Vtt: return subtitles(transcript, format);
    case TranscriptFormat::Json: return dump({{"text", transcript.text()}});
    case TranscriptFormat::VerboseJson: return verbose_json(transcript);
  }
  return {};
}

}  // namespace rayo::whisper
