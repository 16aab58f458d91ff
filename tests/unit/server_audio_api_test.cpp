// The form fields of OpenAI's audio endpoints -> a transcription's options,
// without sockets (server/audio_api.h).
#include <gtest/gtest.h>

#include "server/audio_api.h"

namespace rayo::server {
namespace {

using Fields = std::multimap<std::string, std::string>;

ApiError error_of(const Fields& fields, AudioTask task = AudioTask::Transcribe) {
  try {
    parse_audio_request(task, fields, 5);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted";
  return ApiError(0, "");
}

TEST(ServerAudioApi, DefaultsFollowOpenAIAndFasterWhisper) {
  const AudioRequest r = parse_audio_request(AudioTask::Transcribe, {{"model", "whisper-1"}}, 3);
  EXPECT_EQ(r.format, whisper::TranscriptFormat::Json);
  EXPECT_EQ(r.options.task, "transcribe");
  EXPECT_EQ(r.options.language, "");  // detected
  EXPECT_FALSE(r.options.initial_prompt.has_value());
  EXPECT_EQ(r.options.beam_size, 3);
  EXPECT_EQ(r.options.best_of, kAudioBestOf);
  EXPECT_FALSE(r.options.without_timestamps);
  EXPECT_EQ(r.options.temperatures, fallback_temperatures(0.0));
  EXPECT_EQ(parse_audio_request(AudioTask::Translate, {}, 5).options.task, "translate");
}

TEST(ServerAudioApi, FieldsSetTheirOptions) {
  const AudioRequest r = parse_audio_request(
      AudioTask::Transcribe,
      {{"language", "de"}, {"prompt", "Rayo, NVRTC"}, {"response_format", "verbose_json"}, {"temperature", "0.4"},
       {"timestamp_granularities[]", "segment"}, {"unknown_field", "ignored"}},
      5);
  EXPECT_EQ(r.options.language, "de");
  ASSERT_TRUE(r.options.initial_prompt.has_value());
  EXPECT_EQ(*r.options.initial_prompt, "Rayo, NVRTC");
  EXPECT_EQ(r.format, whisper::TranscriptFormat::VerboseJson);
  ASSERT_EQ(r.options.temperatures.size(), 4u);
  EXPECT_DOUBLE_EQ(r.options.temperatures.front(), 0.4);
  EXPECT_NEAR(r.options.temperatures.back(), 1.0, 1e-9);
  for (const char* f : {"json", "text", "srt", "vtt", "verbose_json"})
    EXPECT_NO_THROW(parse_audio_request(AudioTask::Transcribe, {{"response_format", f}}, 5)) << f;
  // Translations take the spoken language too (the source of the translation).
  EXPECT_EQ(parse_audio_request(AudioTask::Translate, {{"language", "fr"}}, 5).options.language, "fr");
  // A repeated field: the last one counts.
  EXPECT_EQ(parse_audio_request(AudioTask::Transcribe, {{"language", "de"}, {"language", "es"}}, 5).options.language,
            "es");
}

TEST(ServerAudioApi, TemperaturesFallBackBy02UpToOne) {
  EXPECT_EQ(fallback_temperatures(0.0).size(), 6u);
  EXPECT_NEAR(fallback_temperatures(0.0)[5], 1.0, 1e-9);
  EXPECT_EQ(fallback_temperatures(1.0).size(), 1u);
  EXPECT_EQ(fallback_temperatures(0.9).size(), 1u);
  EXPECT_EQ(fallback_temperatures(0.8).size(), 2u);
}

TEST(ServerAudioApi, BadFieldsAreRefusedWithTheirParam) {
  for (const char* t : {"-0.1", "1.5", "hot", "", "0.2x", "nan", "inf"}) {
    const ApiError e = error_of({{"temperature", t}});
    EXPECT_EQ(e.status, 400) << t;
    EXPECT_EQ(e.param, "temperature") << t;
  }
  EXPECT_EQ(error_of({{"response_format", "mp3"}}).param, "response_format");
  EXPECT_EQ(error_of({{"language", "xx"}}).param, "language");
  EXPECT_EQ(error_of({{"language", "english"}}).param, "language");
  EXPECT_EQ(error_of({{"prompt", "caf\xe9"}}).param, "prompt");
  EXPECT_EQ(error_of({{"timestamp_granularities[]", "word"}}).param, "timestamp_granularities");
  EXPECT_EQ(error_of({{"timestamp_granularities[]", "segment"}, {"timestamp_granularities[]", "char"}}).param,
            "timestamp_granularities");
}

}  // namespace
}  // namespace rayo::server
