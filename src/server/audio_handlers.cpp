#include "server/audio_handlers.h"

#include <httplib.h>

#include <chrono>

#include "audio/audio_stream.h"
#include "common/error.h"
#include "server/client_watch.h"
#include "server/request_handlers.h"
#include "whisper/transcriber.h"

namespace rayo::server {
namespace {

// Thrown from the progress callback when the client has gone: the
// transcription stops after the window it is in.
struct ClientGone {};

// Counts a request in flight for as long as it lives.
class InFlight {
 public:
  explicit InFlight(std::atomic<int64_t>& n) : n_(n), value_(++n) {}
  ~InFlight() { --n_; }
  int64_t value() const { return value_; }

 private:
  std::atomic<int64_t>& n_;
  const int64_t value_;
};

}  // namespace

AudioHandlers::AudioHandlers(whisper::Transcriber& transcriber, AudioServiceOptions options)
    : transcriber_(transcriber), options_(std::move(options)) {}

void AudioHandlers::transcriptions(const httplib::Request& req, httplib::Response& res) {
  answer(AudioTask::Transcribe, req, res);
}

void AudioHandlers::translations(const httplib::Request& req, httplib::Response& res) {
  answer(AudioTask::Translate, req, res);
}

json AudioHandlers::model_entry() const {
  const auto& spec = transcriber_.spec();
  const int64_t created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return {{"id", options_.model_name},
          {"object", "model"},
          {"created", created},
          {"owned_by", "rayo"},
          {"meta",
           {{"arch", "whisper"},
            {"n_mels", spec.n_mels},
            {"multilingual", transcriber_.tokenizer().multilingual()},
            {"endpoints", {"/v1/audio/transcriptions", "/v1/audio/translations"}}}}};
}

void AudioHandlers::answer(AudioTask task, const httplib::Request& req, httplib::Response& res) {
  const InFlight in_flight(in_flight_);
  // One request transcribes; up to max_queue wait behind it.
  if (in_flight.value() > options_.max_queue + 1)
    return send_error(res, ApiError(503, "the server is busy: too many transcriptions waiting; retry later", "",
                                    "server_busy", "server_error"));
  if (!req.is_multipart_form_data())
    return send_error(res, ApiError(400, "the request must be multipart/form-data with the audio in a 'file' field",
                                    "file", "invalid_request"));
  if (!req.has_file("file"))
    return send_error(res, ApiError(400, "no 'file' field: send the audio as a file part named 'file'", "file"));
  std::multimap<std::string, std::string> fields;
  for (const auto& [name, part] : req.files)
    if (name != "file") fields.emplace(name, part.content);
  AudioRequest request;
  try {
    request = parse_audio_request(task, fields, options_.beam_size);
  } catch (const ApiError& e) {
    return send_error(res, e);
  }
  const httplib::MultipartFormData file = req.get_file_value("file");
  const std::string name = file.filename.empty() ? std::string("the uploaded file") : file.filename;
  const auto bytes = std::make_shared<const std::vector<unsigned char>>(file.content.begin(), file.content.end());
  const whisper::AudioInput input{name, [name, bytes] { return std::make_unique<audio::AudioStream>(name, *bytes); }};
  try {
    input.open();  // the header: not audio gets its 400 before the model's turn
  } catch (const Error& e) {
    return send_error(res, ApiError(400, e.what(), "file", "invalid_audio"));
  }
  const ClientWatch client(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  request.options.progress = [&client](int64_t, int64_t) {
    if (client.client_gone()) throw ClientGone{};
  };
  whisper::Transcript transcript;
  try {
    transcript = transcriber_.transcribe(input, request.options);
  } catch (const ClientGone&) {
    res.status = 499;  // nginx's "client closed request": what /metrics counts; no one reads it
    return;
  } catch (const Error& e) {
    // The audio's own errors (corrupt data past the header) name the file.
    const std::string what = e.what();
    if (what.rfind(name + ":", 0) == 0) return send_error(res, ApiError(400, what, "file", "invalid_audio"));
    return send_error(res, ApiError(500, what, "", "internal_error", "server_error"));
  }
  ++finished_;
  audio_milliseconds_ += static_cast<uint64_t>(transcript.duration * 1000.0);
  res.status = 200;
  res.set_content(whisper::format_transcript(transcript, request.format),
                  std::string(whisper::transcript_content_type(request.format)));
}

}  // namespace rayo::server
