#pragma once
// OpenAI's audio API, the parts rayo serves: the form fields of
// POST /v1/audio/transcriptions and /v1/audio/translations -> a Whisper
// transcription's options and the response format. No sockets here
// (audio_handlers.cpp does the HTTP), so every rule is unit-testable.
//
// Fields, as OpenAI defines them: file (required; the handler decodes it),
// model (any name: one Whisper model is served), language (ISO-639-1: the
// spoken language; translations take it too, as the source), prompt, response_format (json, text, srt, verbose_json,
// vtt), temperature (0 to 1; 0 lets the decoder raise it by 0.2 while a
// window's text fails the compression and log-probability checks, as
// openai-whisper does from any starting value), timestamp_granularities[]
// ("segment"; "word" is refused: rayo has no word timestamps yet). Unknown
// fields are ignored; a field out of range is refused with ApiError (400).
#include <map>
#include <string>

#include "server/openai_api.h"
#include "whisper/transcribe.h"
#include "whisper/transcript_writer.h"

namespace rayo::server {

enum class AudioTask { Transcribe, Translate };

struct AudioRequest {
  whisper::TranscribeOptions options;
  whisper::TranscriptFormat format = whisper::TranscriptFormat::Json;
};

// Candidates sampled at each temperature above 0 (faster-whisper's default).
inline constexpr int kAudioBestOf = 5;

// The form's fields other than the file (name -> value). beam_size is the
// server's (--whisper-beam-size). Throws ApiError.
AudioRequest parse_audio_request(AudioTask task, const std::multimap<std::string, std::string>& fields,
                                 int beam_size);

// The temperatures tried in turn from a request's starting temperature:
// t, t + 0.2, ... up to 1 (openai-whisper's temperature_increment_on_fallback).
std::vector<double> fallback_temperatures(double start);

}  // namespace rayo::server
