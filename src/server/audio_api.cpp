#include "server/audio_api.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "common/error.h"
#include "tokenizer/utf8.h"
#include "whisper/whisper_tokenizer.h"

namespace rayo::server {
namespace {

// The last value of a field, or none (a form may repeat a field; the last wins,
// as in most form parsers).
const std::string* field(const std::multimap<std::string, std::string>& fields, const std::string& name) {
  const auto [first, last] = fields.equal_range(name);
  return first == last ? nullptr : &std::prev(last)->second;
}

double parse_temperature(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double t = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(t))
    throw ApiError(400, "temperature must be a number between 0 and 1", "temperature");
  if (t < 0.0 || t > 1.0) throw ApiError(400, "temperature must be between 0 and 1", "temperature");
  return t;
}

}  // namespace

std::vector<double> fallback_temperatures(double start) {
  std::vector<double> temperatures;
  // numpy.arange(start, 1.0 + 1e-6, 0.2), as openai-whisper builds it.
  for (int i = 0; start + 0.2 * i <= 1.0 + 1e-6; ++i) temperatures.push_back(start + 0.2 * i);
  return temperatures;
}

AudioRequest parse_audio_request(AudioTask task, const std::multimap<std::string, std::string>& fields,
                                 int beam_size) {
  AudioRequest r;
  r.options.task = task == AudioTask::Translate ? "translate" : "transcribe";
  r.options.beam_size = beam_size;
  r.options.best_of = kAudioBestOf;
  if (const std::string* f = field(fields, "response_format")) {
    try {
      r.format = whisper::parse_transcript_format(*f);
    } catch (const Error&) {
      throw ApiError(400, "response_format must be one of json, text, srt, verbose_json, vtt", "response_format");
    }
  }
  if (const std::string* f = field(fields, "language"); f && !f->empty()) {
    const auto& codes = whisper::WhisperTokenizer::language_codes();
    if (std::find(codes.begin(), codes.end(), *f) == codes.end())
      throw ApiError(400, "unknown language '" + *f + "' (ISO-639-1 codes such as en, de, fr, es, zh, ja)", "language");
    r.options.language = *f;
  }
  if (const std::string* f = field(fields, "prompt"); f && !f->empty()) {
    if (!tokenizer::is_valid_utf8(*f)) throw ApiError(400, "prompt is not valid UTF-8", "prompt");
    r.options.initial_prompt = *f;
  }
  r.options.temperatures = fallback_temperatures(0.0);
  if (const std::string* f = field(fields, "temperature")) r.options.temperatures = fallback_temperatures(parse_temperature(*f));
  for (const char* name : {"timestamp_granularities[]", "timestamp_granularities"}) {
    const auto [first, last] = fields.equal_range(name);
    for (auto it = first; it != last; ++it) {
      if (it->second == "word")
        throw ApiError(400, "word timestamps are not supported; ask for \"segment\"", "timestamp_granularities");
      if (it->second != "segment")
        throw ApiError(400, "timestamp_granularities must be \"segment\" (or \"word\", not supported)",
                       "timestamp_granularities");
    }
  }
  return r;
}

}  // namespace rayo::server
