// rayo transcribe: speech to text with a Whisper model, as faster-whisper and
// the openai-whisper CLI do it (the same decoding rules and defaults).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "audio/audio_stream.h"
#include "cli/command.h"
#include "cli/options.h"
#include "common/error.h"
#include "common/progress.h"
#include "common/strings.h"
#include "whisper/transcriber.h"
#include "whisper/transcript_writer.h"
#include "whisper/whisper_tokenizer.h"

namespace rayo::cli {
namespace {

// A transcription's progress in audio time ("2:05", "1:02:05") read from mel
// frames (100 a second), and its speed as a multiple of real time.
ProgressUnits audio_units() {
  return {[](uint64_t frames) {
            const uint64_t s = frames / 100;
            char text[32];
            if (s >= 3600)
              std::snprintf(text, sizeof(text), "%llu:%02llu:%02llu", static_cast<unsigned long long>(s / 3600),
                            static_cast<unsigned long long>(s / 60 % 60), static_cast<unsigned long long>(s % 60));
            else
              std::snprintf(text, sizeof(text), "%llu:%02llu", static_cast<unsigned long long>(s / 60),
                            static_cast<unsigned long long>(s % 60));
            return std::string(text);
          },
          [](double frames_per_second) {
            char text[32];
            std::snprintf(text, sizeof(text), "%.1fx real time", frames_per_second / 100);
            return std::string(text);
          }};
}

struct TranscribeCommandOptions {
  std::string model;
  std::vector<std::string> audio;
  int threads = 0;
  std::string device = "auto";
  std::string compute_type = "default";
  int beam_size = 5;
  int best_of = 5;
  bool no_timestamps = false;
  std::string language;
  std::string task = "transcribe";
  std::string output_format = "txt";
  std::string output;
  std::string initial_prompt;
  bool no_condition = false;
  std::vector<double> temperatures = {0.0, 0.2, 0.4, 0.6, 0.8, 1.0};
  bool verbose = false;
};

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !(out << text) || !out.flush()) fail(quote_for_message(path.string()), ": cannot write the transcript");
}

void run_transcribe(const TranscribeCommandOptions& o) {
  if (o.beam_size < 1 || o.beam_size > 16) fail("--beam-size must be 1 to 16, got ", o.beam_size);
  if (o.best_of < 1 || o.best_of > 16) fail("--best-of must be 1 to 16, got ", o.best_of);
  if (o.threads < 0) fail("-t must be a positive number of threads, got ", o.threads);
  const whisper::TranscriptFormat format = whisper::parse_transcript_format(o.output_format);
  if (o.task != "transcribe" && o.task != "translate")
    fail("--task must be transcribe or translate, got ", quote_for_message(o.task));
  const auto& codes = whisper::WhisperTokenizer::language_codes();
  if (!o.language.empty() && std::find(codes.begin(), codes.end(), o.language) == codes.end())
    fail("unknown language code ", quote_for_message(o.language), " (Whisper's codes: en, de, fr, es, zh, ja, ...)");
  if (o.temperatures.empty()) fail("--temperature needs at least one value");
  for (double t : o.temperatures)
    if (!(t >= 0.0 && t <= 2.0)) fail("--temperature values must be 0 to 2, got ", t);
  const bool to_directory = o.audio.size() > 1 && !o.output.empty();
  if (to_directory && !std::filesystem::is_directory(o.output))
    fail("with several audio files, -o names a directory for their transcripts; ", quote_for_message(o.output),
         " is not one");

  whisper::GraphRunnerOptions runner_options;
  runner_options.backend.device = o.device;
  runner_options.backend.n_threads = o.threads;
  runner_options.backend.verbose = o.verbose;
  runner_options.max_sequences = std::max(o.beam_size, o.best_of);
  runner_options.weights = whisper::weight_format(o.compute_type);
  whisper::Transcriber transcriber(o.model, runner_options);
  if (!transcriber.tokenizer().multilingual() && ((!o.language.empty() && o.language != "en") || o.task == "translate"))
    std::fprintf(stderr, "rayo: warning: this model is English-only: it transcribes English (--language %s --task %s ignored)\n",
                 o.language.empty() ? "auto" : o.language.c_str(), o.task.c_str());
  whisper::TranscribeOptions t;
  t.language = o.language;
  t.task = o.task;
  t.beam_size = o.beam_size;
  t.best_of = o.best_of;
  t.without_timestamps = o.no_timestamps;
  t.condition_on_previous_text = !o.no_condition;
  if (!o.initial_prompt.empty()) t.initial_prompt = o.initial_prompt;
  t.temperatures = o.temperatures;

  for (const std::string& path : o.audio) {
    const auto t0 = std::chrono::steady_clock::now();
    // Progress in mel frames (100 a second); a bar only for audio of a few minutes or more.
    Progress progress("transcribing " + (path == "-" ? std::string("standard input") : path), 3 * 60 * 100,
                      audio_units());
    t.progress = [&](int64_t done, int64_t total) {
      progress.update(static_cast<uint64_t>(done), static_cast<uint64_t>(total));
    };
    // Standard input is read once, whole; a file is opened again when long (streamed).
    const whisper::Transcript transcript =
        path == "-" ? transcriber.transcribe(audio::load_audio(path), t)
                    : transcriber.transcribe(
                          whisper::AudioInput{path, [&path] { return std::make_unique<audio::AudioStream>(path); }}, t);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string text = whisper::format_transcript(transcript, format);
    if (o.output.empty()) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    } else if (to_directory) {
      const std::string stem = std::filesystem::path(path).stem().string();
      write_file(std::filesystem::path(o.output) / (stem + "." + std::string(whisper::transcript_format_name(format))), text);
    } else {
      write_file(o.output, text);
    }
    if (o.verbose || isatty(STDERR_FILENO))
      std::fprintf(stderr, "rayo: %s: %.1f s of audio in %.2f s (%.1fx real time)\n", path.c_str(),
                   transcript.duration, seconds, seconds > 0 ? transcript.duration / seconds : 0.0);
  }
}

void setup(CLI::App& root) {
  auto o = std::make_shared<TranscribeCommandOptions>();
  auto* cmd = root.add_subcommand("transcribe", "Transcribe speech with a Whisper model (as faster-whisper does)");
  cmd->add_option("-m,--model", o->model, "Whisper model: a CTranslate2 folder (model.bin, config.json, vocabulary.json or .txt) or a whisper.cpp ggml-*.bin file")
      ->required();
  cmd->add_option("audio", o->audio, "audio files (WAV, FLAC, OGG, MP3; any rate and channels), or - for standard input")
      ->required();
  cmd->add_option("-t,--threads", o->threads, "CPU threads (default: physical cores)");
  cmd->add_option("--device", o->device, "auto, cpu or cuda (auto: the CPU; Whisper on the GPU is not yet measured on one)")
      ->capture_default_str();
  cmd->add_option("--compute-type", o->compute_type,
                  "default (weights as stored: floats in f32 arithmetic, a ggml file's quantized ones as they are) or int8 (float weights quantized at load)")
      ->capture_default_str();
  cmd->add_option("--beam-size", o->beam_size, "beams of the search at temperature 0 (1: greedy)")->capture_default_str();
  cmd->add_option("--best-of", o->best_of, "candidates sampled at each temperature above 0")->capture_default_str();
  cmd->add_flag("--no-timestamps", o->no_timestamps, "decode without timestamp tokens (one segment per 30-s window)");
  cmd->add_option("--language", o->language, "language code (en, de, ...); default: detected (multilingual models)");
  cmd->add_option("--task", o->task, "transcribe, or translate (into English; multilingual models)")
      ->capture_default_str();
  cmd->add_option("--output-format", o->output_format, "txt, srt, vtt, json or verbose_json")->capture_default_str();
  cmd->add_option("-o,--output", o->output,
                  "write the transcript to this file (default: standard output); with several audio files, a directory");
  cmd->add_option("--initial-prompt", o->initial_prompt, "text that prompts the first window (names, spelling, style)");
  cmd->add_flag("--no-condition-on-previous-text", o->no_condition,
                "do not prompt each window with the text before it");
  cmd->add_option("--temperature", o->temperatures,
                  "temperatures tried in turn while a window's text fails the checks (default 0 0.2 0.4 0.6 0.8 1)");
  cmd->add_flag("--verbose", o->verbose, "print the speed of each file on stderr");
  cmd->callback([o] { run_transcribe(*o); });
}

}  // namespace

RAYO_COMMAND(transcribe, 12, setup);

}  // namespace rayo::cli
