// The public Whisper (include/rayo/whisper.h) on top of whisper::Transcriber,
// as `rayo transcribe` and `rayo serve --whisper` use it.
#include "rayo/whisper.h"

#include <algorithm>

#include "audio/audio_stream.h"
#include "common/error.h"
#include "common/strings.h"
#include "whisper/transcriber.h"
#include "whisper/weight_store.h"

namespace rayo {
namespace {

whisper::GraphRunnerOptions runner_options(const WhisperOptions& o) {
  if (o.device != "auto" && o.device != "cpu" && o.device != "cuda")
    fail("device must be auto, cpu or cuda, got ", quote_for_message(o.device));
  if (o.n_threads < 0) fail("n_threads must be 0 (the physical cores) or positive, got ", o.n_threads);
  if (o.max_beams < 1 || o.max_beams > 16) fail("max_beams must be 1 to 16, got ", o.max_beams);
  whisper::GraphRunnerOptions r;
  r.backend.device = o.device;  // auto: the CPU (whisper/graph_runner.cpp)
  r.backend.n_threads = o.n_threads;
  r.max_sequences = o.max_beams;
  r.weights = whisper::weight_format(o.compute_type);
  return r;
}

whisper::TranscribeOptions internal_options(const TranscribeOptions& o, const TranscribeProgress& progress) {
  if (o.beam_size < 1) fail("beam_size must be at least 1, got ", o.beam_size);
  if (o.best_of < 1) fail("best_of must be at least 1, got ", o.best_of);
  if (o.temperature.empty()) fail("temperature needs at least one value");
  for (double t : o.temperature)
    if (!(t >= 0.0 && t <= 2.0)) fail("temperature values must be 0 to 2, got ", t);
  if (!(o.patience > 0)) fail("patience must be positive, got ", o.patience);
  whisper::TranscribeOptions t;
  if (o.language) {
    const auto& codes = whisper::WhisperTokenizer::language_codes();
    if (std::find(codes.begin(), codes.end(), *o.language) == codes.end())
      fail("unknown language code ", quote_for_message(*o.language), " (Whisper's codes: en, de, fr, es, zh, ja, ...)");
    t.language = *o.language;
  }
  if (o.task != "transcribe" && o.task != "translate")
    fail("task must be transcribe or translate, got ", quote_for_message(o.task));
  t.task = o.task;
  t.beam_size = o.beam_size;
  t.best_of = o.best_of;
  t.patience = o.patience;
  t.length_penalty = o.length_penalty;
  t.temperatures = o.temperature;
  t.compression_ratio_threshold = o.compression_ratio_threshold;
  t.log_prob_threshold = o.log_prob_threshold;
  t.no_speech_threshold = o.no_speech_threshold;
  t.condition_on_previous_text = o.condition_on_previous_text;
  t.initial_prompt = o.initial_prompt;
  t.without_timestamps = o.without_timestamps;
  t.suppress_blank = o.suppress_blank;
  t.max_initial_timestamp = o.max_initial_timestamp;
  t.seed = o.seed;
  if (progress)
    t.progress = [progress](int64_t done, int64_t total) {
      progress(static_cast<double>(done) / 100.0, static_cast<double>(total) / 100.0);
    };
  return t;
}

Transcription public_transcription(const whisper::Transcript& t) {
  Transcription out;
  out.language = t.language;
  out.language_probability = t.language_probability;
  out.duration = t.duration;
  for (const auto& s : t.segments)
    out.segments.push_back({s.id, s.seek, s.start, s.end, s.text, s.tokens, s.temperature, s.avg_logprob,
                            s.compression_ratio, s.no_speech_prob});
  return out;
}

}  // namespace

std::string Transcription::text() const {
  whisper::Transcript t;
  for (const auto& s : segments) t.segments.push_back({.text = s.text});
  return t.text();
}

struct Whisper::Impl {
  explicit Impl(const std::string& path, const WhisperOptions& o) : transcriber(path, runner_options(o)) {}
  whisper::Transcriber transcriber;
};

Whisper::Whisper(const std::string& model_path, const WhisperOptions& options)
    : impl_(std::make_unique<Impl>(model_path, options)) {}
Whisper::~Whisper() = default;
Whisper::Whisper(Whisper&&) noexcept = default;
Whisper& Whisper::operator=(Whisper&&) noexcept = default;

Transcription Whisper::transcribe_file(const std::string& path, const TranscribeOptions& options,
                                       const TranscribeProgress& progress) {
  const whisper::TranscribeOptions t = internal_options(options, progress);
  const whisper::AudioInput input{path, [path] { return std::make_unique<audio::AudioStream>(path); }};
  return public_transcription(impl_->transcriber.transcribe(input, t));
}

Transcription Whisper::transcribe(std::span<const float> samples, const TranscribeOptions& options,
                                  const TranscribeProgress& progress) {
  if (samples.empty()) fail("no audio samples");
  const whisper::TranscribeOptions t = internal_options(options, progress);
  return public_transcription(impl_->transcriber.transcribe(samples, t));
}

bool Whisper::multilingual() const { return impl_->transcriber.tokenizer().multilingual(); }

int Whisper::n_mels() const { return static_cast<int>(impl_->transcriber.spec().n_mels); }

std::vector<std::string> Whisper::languages() const {
  if (!multilingual()) return {"en"};
  const auto& codes = whisper::WhisperTokenizer::language_codes();
  return {codes.begin(), codes.end()};
}

}  // namespace rayo
