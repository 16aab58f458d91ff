// rayo convert: writes a Whisper model as a whisper.cpp ggml file, so that a
// model faster-whisper's users have (a CTranslate2 folder) runs in whisper.cpp
// and its tools, and the other way round through rayo's own reader:
//
//   rayo convert -m whisper-tiny.en -o ggml-tiny.en.bin              (f16, as whisper.cpp ships them)
//   rayo convert -m whisper-tiny.en -o ggml-tiny.en-q8_0.bin --type q8_0

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/command.h"
#include "common/error.h"
#include "common/progress.h"
#include "common/strings.h"
#include "whisper/ggml_whisper.h"
#include "whisper/whisper_loader.h"

namespace rayo::cli {
namespace {

struct ConvertOptions {
  std::string model, output, type = "f16";
};

void run_convert(const ConvertOptions& o) {
  const auto type = parse_tensor_type(o.type);
  if (!type) fail("convert: unknown --type '", o.type, "' (f16, f32, q8_0, q5_1, q5_0, q4_1 or q4_0)");
  std::error_code error;
  if (std::filesystem::equivalent(o.model, o.output, error))
    fail("convert: the output ", o.output, " is the model itself");
  const auto start = std::chrono::steady_clock::now();
  const whisper::WhisperFiles files = whisper::load_whisper(o.model);
  Progress progress("convert");
  const uint64_t size = whisper::write_ggml_whisper(files, o.output, *type, [&](uint64_t done, uint64_t total) {
    progress.update(done, total);
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto& s = files.spec;
  std::printf("wrote %s: whisper.cpp ggml, %s, %u+%u layers, width %u, %u heads, %u mels, vocab %u, %s in %.1f s\n",
              o.output.c_str(), std::string(type_name(*type)).c_str(), s.n_audio_layer, s.n_text_layer,
              s.n_audio_state, s.n_audio_head, s.n_mels, s.n_vocab, format_bytes(size).c_str(), seconds);
}

void setup(CLI::App& root) {
  auto o = std::make_shared<ConvertOptions>();
  auto* cmd = root.add_subcommand("convert", "Write a Whisper model as a whisper.cpp ggml file");
  cmd->add_option("-m,--model", o->model,
                  "Whisper model: a CTranslate2 folder (model.bin, config.json, vocabulary.json or .txt) or a whisper.cpp "
                  "ggml-*.bin file")
      ->required();
  cmd->add_option("-o,--output", o->output, "ggml file to write")->required();
  cmd->add_option("--type", o->type,
                  "weight type: f16 (as whisper.cpp ships its models), f32, or q8_0|q5_1|q5_0|q4_1|q4_0 (the "
                  "matrices quantized as whisper.cpp's quantize does)")
      ->capture_default_str();
  cmd->callback([o] { run_convert(*o); });
}

}  // namespace

RAYO_COMMAND(convert, 81, setup);

}  // namespace rayo::cli
