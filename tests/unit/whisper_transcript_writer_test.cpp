// Transcripts written as txt, SRT, VTT, JSON and verbose JSON
// (whisper/transcript_writer.h): byte for byte what openai-whisper's CLI
// writers and the OpenAI API give for the same segments, including the edges
// (hours, milliseconds that round half to even or carry into the next hour,
// "-->" in a text, quotes and newlines in JSON, UTF-8, nothing at all).
#include <gtest/gtest.h>

#include "common/error.h"
#include "whisper/transcript.h"
#include "whisper/transcript_writer.h"

namespace rayo::whisper {
namespace {

Segment segment(int id, double start, double end, std::string text) {
  Segment s;
  s.id = id;
  s.start = start;
  s.end = end;
  s.text = std::move(text);
  return s;
}

// Three segments: a plain one whose end rounds half to even (1062.5 ms ->
// 1062), one with quotes, a newline and "-->" that ends a hair before an hour
// (3599999.6 ms carries into 01:00:00), one past an hour in UTF-8.
Transcript three_segments() {
  Transcript t;
  t.language = "en";
  t.task = "transcribe";
  t.duration = 3731.0;
  t.segments = {segment(0, 0.0, 1.0625, " Hello, world. "),
                segment(1, 1.1875, 3599.9996, " She said \"hi\" --> left\nthen ran."),
                segment(2, 3725.25, 3730.5, " Gr\u00fc\u00dfe, \u4e16\u754c!")};
  return t;
}

TEST(TranscriptWriter, TextJoinsTheSegmentsAndStripsTheEnds) {
  EXPECT_EQ(three_segments().text(), "Hello, world.  She said \"hi\" --> left\nthen ran. Gr\u00fc\u00dfe, \u4e16\u754c!");
  EXPECT_EQ(format_transcript(three_segments(), TranscriptFormat::Text),
            "Hello, world.  She said \"hi\" --> left\nthen ran. Gr\u00fc\u00dfe, \u4e16\u754c!\n");
  EXPECT_EQ(Transcript{}.text(), "");
  EXPECT_EQ(format_transcript(Transcript{}, TranscriptFormat::Text), "\n");
}

TEST(TranscriptWriter, SrtAsOpenAiWhisperWritesIt) {
  EXPECT_EQ(format_transcript(three_segments(), TranscriptFormat::Srt),
            "1\n"
            "00:00:00,000 --> 00:00:01,062\n"
            "Hello, world.\n"
            "\n"
            "2\n"
            "00:00:01,188 --> 01:00:00,000\n"
            "She said \"hi\" -> left\nthen ran.\n"
            "\n"
            "3\n"
            "01:02:05,250 --> 01:02:10,500\n"
            "Gr\u00fc\u00dfe, \u4e16\u754c!\n"
            "\n");
  EXPECT_EQ(format_transcript(Transcript{}, TranscriptFormat::Srt), "");
}

TEST(TranscriptWriter, VttAsOpenAiWhisperWritesIt) {
  // Hours only once there are any; '.' before the milliseconds.
  EXPECT_EQ(format_transcript(three_segments(), TranscriptFormat::Vtt),
            "WEBVTT\n"
            "\n"
            "00:00.000 --> 00:01.062\n"
            "Hello, world.\n"
            "\n"
            "00:01.188 --> 01:00:00.000\n"
            "She said \"hi\" -> left\nthen ran.\n"
            "\n"
            "01:02:05.250 --> 01:02:10.500\n"
            "Gr\u00fc\u00dfe, \u4e16\u754c!\n"
            "\n");
  EXPECT_EQ(format_transcript(Transcript{}, TranscriptFormat::Vtt), "WEBVTT\n\n");
}

TEST(TranscriptWriter, TimestampsRoundAsPythonDoes) {
  EXPECT_EQ(format_timestamp(0.0625, false, '.'), "00:00.062");  // 62.5 ms: half to even
  EXPECT_EQ(format_timestamp(0.1875, false, '.'), "00:00.188");  // 187.5 ms: half to even
  EXPECT_EQ(format_timestamp(59.9996, false, '.'), "01:00.000");
  EXPECT_EQ(format_timestamp(3599.9996, true, ','), "01:00:00,000");
  EXPECT_EQ(format_timestamp(12.5, true, ','), "00:00:12,500");
  EXPECT_EQ(format_timestamp(360000.0, false, '.'), "100:00:00.000");
  EXPECT_EQ(format_timestamp(-0.5, true, ','), "00:00:00,000");
}

TEST(TranscriptWriter, ArrowsAreReplacedLeftToRightAsPythonDoes) {
  Transcript t;
  t.segments = {segment(0, 0, 1, "a-->b--->c")};
  // str.replace finds "-->" at "--->"'s second character, leaving "-" + "->".
  EXPECT_EQ(format_transcript(t, TranscriptFormat::Srt), "1\n00:00:00,000 --> 00:00:01,000\na->b-->c\n\n");
}

TEST(TranscriptWriter, JsonHasTheTextAlone) {
  EXPECT_EQ(format_transcript(three_segments(), TranscriptFormat::Json),
            "{\n"
            "  \"text\": \"Hello, world.  She said \\\"hi\\\" --> left\\nthen ran. Gr\u00fc\u00dfe, \u4e16\u754c!\"\n"
            "}\n");
  EXPECT_EQ(format_transcript(Transcript{}, TranscriptFormat::Json), "{\n  \"text\": \"\"\n}\n");
}

TEST(TranscriptWriter, JsonReplacesBytesThatAreNotUtf8) {
  Transcript t;
  t.segments = {segment(0, 0, 1, " caf\xc3")};  // a character cut at a window's edge
  EXPECT_EQ(format_transcript(t, TranscriptFormat::Json), "{\n  \"text\": \"caf\ufffd\"\n}\n");
}

TEST(TranscriptWriter, VerboseJsonAsTheOpenAiApi) {
  Transcript t;
  t.language = "en";
  t.task = "transcribe";
  t.duration = 3.5;
  Segment s = segment(0, 0.0, 3.2, " Hi.");
  s.tokens = {50363, 17250, 13, 50523};
  s.temperature = 0.0;
  s.avg_logprob = -0.25;
  s.compression_ratio = 0.75;
  s.no_speech_prob = 0.015625;
  t.segments = {s};
  EXPECT_EQ(format_transcript(t, TranscriptFormat::VerboseJson),
            "{\n"
            "  \"task\": \"transcribe\",\n"
            "  \"language\": \"english\",\n"
            "  \"duration\": 3.5,\n"
            "  \"text\": \"Hi.\",\n"
            "  \"segments\": [\n"
            "    {\n"
            "      \"id\": 0,\n"
            "      \"seek\": 0,\n"
            "      \"start\": 0.0,\n"
            "      \"end\": 3.2,\n"
            "      \"text\": \" Hi.\",\n"
            "      \"tokens\": [\n"
            "        50363,\n"
            "        17250,\n"
            "        13,\n"
            "        50523\n"
            "      ],\n"
            "      \"temperature\": 0.0,\n"
            "      \"avg_logprob\": -0.25,\n"
            "      \"compression_ratio\": 0.75,\n"
            "      \"no_speech_prob\": 0.015625\n"
            "    }\n"
            "  ]\n"
            "}\n");

  Transcript empty;
  empty.language = "xx";  // not a Whisper language: passed through as given
  empty.task = "translate";
  EXPECT_EQ(format_transcript(empty, TranscriptFormat::VerboseJson),
            "{\n"
            "  \"task\": \"translate\",\n"
            "  \"language\": \"xx\",\n"
            "  \"duration\": 0.0,\n"
            "  \"text\": \"\",\n"
            "  \"segments\": []\n"
            "}\n");
}

TEST(TranscriptWriter, StripsWhatPythonStrips) {
  EXPECT_EQ(strip_whitespace(" \t\n\r\v\f x y \n"), "x y");
  // U+3000 ideographic space, U+00A0 no-break space, U+2028 line separator.
  EXPECT_EQ(strip_whitespace("\u3000\u00a0x\u2028"), "x");
  // Not whitespace: U+200B zero-width space, a stray byte, a lone continuation byte.
  EXPECT_EQ(strip_whitespace("\u200bx"), "\u200bx");
  EXPECT_EQ(strip_whitespace(" \xa0x\xa0 "), "\xa0x\xa0");
  EXPECT_EQ(strip_whitespace("   "), "");
  EXPECT_EQ(strip_whitespace(""), "");
}

TEST(TranscriptWriter, ParsesFormatNamesAndRefusesOthersInOneLine) {
  EXPECT_EQ(parse_transcript_format("txt"), TranscriptFormat::Text);
  EXPECT_EQ(parse_transcript_format("text"), TranscriptFormat::Text);
  EXPECT_EQ(parse_transcript_format("srt"), TranscriptFormat::Srt);
  EXPECT_EQ(parse_transcript_format("vtt"), TranscriptFormat::Vtt);
  EXPECT_EQ(parse_transcript_format("json"), TranscriptFormat::Json);
  EXPECT_EQ(parse_transcript_format("verbose_json"), TranscriptFormat::VerboseJson);
  for (auto f : {TranscriptFormat::Text, TranscriptFormat::Srt, TranscriptFormat::Vtt, TranscriptFormat::Json,
                 TranscriptFormat::VerboseJson})
    EXPECT_EQ(parse_transcript_format(transcript_format_name(f)), f);
  EXPECT_EQ(transcript_content_type(TranscriptFormat::VerboseJson), "application/json");
  EXPECT_EQ(transcript_content_type(TranscriptFormat::Srt), "text/plain; charset=utf-8");

  for (const char* bad : {"", "SRT", "tsv", "verbose-json", "json\nsrt"}) {
    try {
      parse_transcript_format(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      EXPECT_NE(message.find("(valid: txt, text, srt, vtt, json, verbose_json)"), std::string::npos) << message;
    }
  }
  EXPECT_THROW(parse_transcript_format("xml"), Error);
  try {
    parse_transcript_format("xml");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown output format \"xml\" (valid: txt, text, srt, vtt, json, verbose_json)");
  }
}

}  // namespace
}  // namespace rayo::whisper
