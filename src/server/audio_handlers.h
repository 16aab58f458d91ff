#pragma once
// What rayo serve answers on its audio routes, with a Whisper model
// (rayo serve --whisper): POST /v1/audio/transcriptions and
// /v1/audio/translations, multipart forms as OpenAI's API takes them
// (audio_api.h). The upload is decoded in memory (any format libsndfile
// reads, any rate and channels), transcribed as rayo transcribe does it, and
// answered in the response_format asked for.
//
// Requests are accepted concurrently; the model transcribes one at a time
// (whisper/transcriber.h), the others wait their turn, up to max_queue of
// them; beyond that a request gets 503 at once. A client that leaves stops
// its transcription after the current 30-s window.
#include <atomic>
#include <cstdint>
#include <string>

#include "server/audio_api.h"
#include "server/openai_api.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace rayo::whisper {
class Transcriber;
}

namespace rayo::server {

struct AudioServiceOptions {
  std::string model_name;  // as /v1/models names it
  int beam_size = 5;       // of every transcription (at temperature 0)
  int64_t max_queue = 64;  // requests that may wait for the model
};

class AudioHandlers {
 public:
  AudioHandlers(whisper::Transcriber& transcriber, AudioServiceOptions options);

  void transcriptions(const httplib::Request& req, httplib::Response& res);
  void translations(const httplib::Request& req, httplib::Response& res);

  // The model's entry in /v1/models.
  json model_entry() const;
  // For /metrics.
  int64_t in_flight() const { return in_flight_.load(); }
  uint64_t finished() const { return finished_.load(); }
  double audio_seconds() const { return audio_milliseconds_.load() / 1000.0; }

 private:
  void answer(AudioTask task, const httplib::Request& req, httplib::Response& res);

  whisper::Transcriber& transcriber_;
  const AudioServiceOptions options_;
  std::atomic<int64_t> in_flight_{0};
  std::atomic<uint64_t> finished_{0};
  std::atomic<uint64_t> audio_milliseconds_{0};
};

}  // namespace rayo::server
