// rayo synth: writes a random-weight model with the shapes of a real one, for
// benchmarks and loader tests (values do not change speed).
//
//   rayo synth --preset llama3-8b --type q4_k_m -o llama3-8b-q4_k_m.gguf
//   rayo synth --arch qwen3 --dim 512 --layers 4 --type q8_0 -o small.gguf
//   rayo synth --whisper large-v3 -o whisper-large-v3   (a CTranslate2 Whisper folder)

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "cli/command.h"
#include "common/error.h"
#include "common/progress.h"
#include "common/strings.h"
#include "tools/synth_model.h"
#include "whisper/ct2_writer.h"
#include "whisper/whisper_presets.h"

namespace rayo::cli {
namespace {

struct SynthOptions {
  std::string arch;
  std::string preset = "tiny";
  std::string type = "q4_k_m";
  std::string output;
  std::string whisper;  // a Whisper preset: write a CTranslate2 folder instead of a GGUF file
  uint64_t seed = 42;
  std::optional<uint32_t> dim, layers, heads, kv_heads, ffn, vocab, ctx, head_dim, window;
  std::optional<float> rope_base_swa, rope_scaling;
};

void run_synth(const SynthOptions& o) {
  if (o.output.empty()) fail("synth: give the output file with -o FILE");
  const auto arch = o.arch.empty() ? std::nullopt : std::optional<std::string_view>(o.arch);
  tools::SynthConfig c = tools::synth_preset(o.preset, arch);
  if (o.dim) c.n_embd = *o.dim;
  if (o.layers) c.n_layers = *o.layers;
  if (o.heads) c.n_head = *o.heads;
  if (o.kv_heads) c.n_head_kv = *o.kv_heads;
  if (o.ffn) c.n_ff = *o.ffn;
  if (o.vocab) c.n_vocab = *o.vocab;
  if (o.ctx) c.n_ctx = *o.ctx;
  if (o.head_dim) c.head_dim = *o.head_dim;
  if (o.window || o.rope_base_swa || o.rope_scaling) {
    if (c.arch != "gemma3") fail("synth: --window, --rope-base-swa and --rope-scaling are for --arch gemma3");
    if (o.window) c.sliding_window = *o.window;
    if (o.rope_base_swa) c.rope_freq_base_swa = *o.rope_base_swa;
    if (o.rope_scaling) c.rope_scaling_factor = *o.rope_scaling;
  }
  if (o.dim || o.heads) c.name = cat("custom ", c.arch, " (synthetic)");
  const tools::SynthFileType ftype = tools::parse_synth_file_type(o.type);

  const auto start = std::chrono::steady_clock::now();
  Progress progress("synth");
  uint64_t size = 0;
  tools::write_synth_model(c, ftype, o.seed, o.output, [&](uint64_t done, uint64_t total) {
    progress.update(done, total);
    size = total;
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("wrote %s: %s %s, %u layers, dim %u, %u/%u heads, ffn %u, vocab %u, %s in %.1f s (%.0f MB/s)\n",
              o.output.c_str(), c.arch.c_str(), std::string(tools::synth_file_type_name(ftype)).c_str(), c.n_layers,
              c.n_embd, c.n_head, c.n_head_kv, c.n_ff, c.n_vocab, format_bytes(size).c_str(), seconds,
              seconds > 0 ? static_cast<double>(size) / 1e6 / seconds : 0.0);
}

// The GGUF options, which --whisper does not take (a Whisper preset fixes every size).
constexpr const char* kGgufOnlyOptions[] = {
    "--preset", "--arch", "--type", "--dim", "--layers", "--heads", "--kv-heads", "--head-dim",
    "--ffn",    "--vocab", "--ctx", "--window", "--rope-base-swa", "--rope-scaling"};

void run_whisper_synth(const SynthOptions& o, const CLI::App& cmd) {
  for (const char* name : kGgufOnlyOptions)
    if (cmd.count(name) > 0) fail("synth: ", name, " is for GGUF models; --whisper takes only -o and --seed");
  const whisper::WhisperPreset& preset = whisper::whisper_preset(o.whisper);

  const auto start = std::chrono::steady_clock::now();
  Progress progress("synth");
  const uint64_t size = whisper::write_ct2_whisper(preset, o.seed, o.output,
                                                   [&](uint64_t done, uint64_t total) { progress.update(done, total); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("wrote %s: whisper %s (CTranslate2, float16), %u+%u layers, width %u, %u heads, %u mels, vocab %u, "
              "model.bin %s in %.1f s (%.0f MB/s)\n",
              o.output.c_str(), std::string(preset.name).c_str(), preset.n_layer, preset.decoder_layers(), preset.n_state,
              preset.n_head, preset.n_mels, preset.vocabulary.n_vocab(), format_bytes(size).c_str(), seconds,
              seconds > 0 ? static_cast<double>(size) / 1e6 / seconds : 0.0);
}

void setup(CLI::App& root) {
  auto o = std::make_shared<SynthOptions>();
  auto* cmd = root.add_subcommand("synth", "Write a random-weight model with the shapes of a real one");
  std::string presets;
  for (auto p : tools::synth_preset_names()) presets += cat(presets.empty() ? "" : "|", p);
  cmd->add_option("--preset", o->preset, "Shapes to copy: " + presets)->capture_default_str();
  cmd->add_option("--arch", o->arch, "Architecture: llama|qwen2|qwen3|gemma3 (with --preset tiny; default llama)");
  cmd->add_option("--type", o->type, "Weight type: f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q2_k|q3_k_m|q4_k_s|q4_k_m|q5_k_s|q5_k_m|q6_k|iq4_nl|iq4_xs")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Random seed (same seed, same bytes)")->capture_default_str();
  cmd->add_option("--whisper", o->whisper,
                  "Write a CTranslate2 Whisper model folder (model.bin, config.json, vocabulary.txt) with these "
                  "shapes instead: " + whisper::whisper_preset_names());
  cmd->add_option("-o,--output", o->output, "Output GGUF file (with --whisper: the folder to write)")->required();
  cmd->add_option("--dim", o->dim, "Override the embedding width");
  cmd->add_option("--layers", o->layers, "Override the layer count");
  cmd->add_option("--heads", o->heads, "Override the attention head count");
  cmd->add_option("--kv-heads", o->kv_heads, "Override the KV head count");
  cmd->add_option("--head-dim", o->head_dim, "Override the head size (default dim / heads)");
  cmd->add_option("--ffn", o->ffn, "Override the feed-forward width");
  cmd->add_option("--vocab", o->vocab, "Override the vocabulary size");
  cmd->add_option("--ctx", o->ctx, "Override the training context length");
  cmd->add_option("--window", o->window, "gemma3: positions a sliding-window layer sees (0: no sliding layers)");
  cmd->add_option("--rope-base-swa", o->rope_base_swa, "gemma3: rope base of the sliding-window layers (default: not written, 10000)");
  cmd->add_option("--rope-scaling", o->rope_scaling, "gemma3: linear rope scaling factor of the full layers (0: none)");
  cmd->callback([o, cmd] {
    if (cmd->count("--whisper") > 0) run_whisper_synth(*o, *cmd);
    else run_synth(*o);
  });
}

}  // namespace

RAYO_COMMAND(synth, 80, setup);

}  // namespace rayo::cli
