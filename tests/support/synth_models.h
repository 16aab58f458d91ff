#pragma once
// Synthetic models with committed llama.cpp references (tests/data/gemma3/):
// models.txt lists each one's `rayo synth` arguments (same seed, same bytes).
// The parity tests write the file with the rayo binary under test; the
// emulated-GPU tests make the same bytes in memory (synth_config reads the
// arguments as the command does, and a test holds the two to the same bytes).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "support/reference.h"
#include "tools/synth_model.h"

namespace rayo::test {

struct SynthModel {
  std::string name;   // "gemma3-tiny-f32": labels tests; the reference is NAME.json without the prefix
  std::string args;   // `rayo synth` arguments
  std::filesystem::path reference;
  tools::SynthConfig config;  // what the arguments make
  tools::SynthFileType type = tools::SynthFileType::Q4_K_M;
  uint64_t seed = 42;
};

// The Gemma 3 models of tests/data/gemma3/models.txt.
const std::vector<SynthModel>& gemma3_synth_models();
const SynthModel& gemma3_synth_model(const std::string& name);

// The same models as parity cases: ReferenceModel::synth_args holds the
// arguments, model_dir is left empty (the test makes the file).
std::vector<ReferenceModel> gemma3_reference_models();

// The model's bytes, made in memory, opened.
gguf::File open_synth_model(const SynthModel& m);
// The model written to dir/NAME.gguf (tools::write_synth_model); returns the path.
std::filesystem::path write_synth_model(const SynthModel& m, const std::filesystem::path& dir);

// Writes `rayo synth <args> -o <dir>/<file>` with the rayo binary under test;
// false, with the command's output in *error, when synth fails.
bool make_synth_model(const std::string& args, const std::filesystem::path& dir, const std::string& file,
                      std::string* error);

}  // namespace rayo::test
