#pragma once
// A Transcript written out in the formats Whisper's users expect, byte for
// byte as the tools they compare against write them:
//   txt/text      the text alone on one line (the OpenAI API's response_format=text);
//   srt, vtt      as the openai-whisper CLI's WriteSRT and WriteVTT write them
//                 (whisper/utils.py: numbered cues or a WEBVTT header, its
//                 format_timestamp, each segment's text stripped, "-->" in it
//                 replaced by "->");
//   json          {"text": ...}, the OpenAI API's response_format=json;
//   verbose_json  the OpenAI API's: task, language, duration, text and the
//                 segments with their decoding statistics.
// The CLI (rayo transcribe) and the server (/v1/audio/transcriptions) both
// write through here, so that a file and an HTTP response agree.
#include <string>
#include <string_view>

#include "whisper/transcript.h"

namespace rayo::whisper {

enum class TranscriptFormat { Text, Srt, Vtt, Json, VerboseJson };

// "txt" or "text", "srt", "vtt", "json", "verbose_json". Anything else throws a
// one-line rayo::Error that lists the valid names.
TranscriptFormat parse_transcript_format(std::string_view name);
std::string_view transcript_format_name(TranscriptFormat format);  // "txt", "srt", ...
// The HTTP Content-Type of a response in this format.
std::string_view transcript_content_type(TranscriptFormat format);

// The whole document, ending with a newline (SRT of no segments is empty).
std::string format_transcript(const Transcript& transcript, TranscriptFormat format);

// openai-whisper's format_timestamp: "HH:MM:SS,mmm" with always_include_hours
// (SRT, decimal marker ','), else "MM:SS.mmm" below an hour (VTT). Milliseconds
// are rounded half to even, as Python's round() does; negative times read as 0.
std::string format_timestamp(double seconds, bool always_include_hours, char decimal_marker);

// `text` without the leading and trailing whitespace Python's str.strip()
// removes (ASCII and Unicode spaces, line and paragraph separators), which is
// how Whisper's tools trim segment and transcript texts.
std::string_view strip_whitespace(std::string_view text);

}  // namespace rayo::whisper
