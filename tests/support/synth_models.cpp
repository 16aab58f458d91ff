#include "support/synth_models.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "support/paths.h"

namespace rayo::test {
namespace {

std::filesystem::path gemma3_data() { return std::filesystem::path(RAYO_SOURCE_DIR) / "tests" / "data" / "gemma3"; }

// The options of `rayo synth` (cli/cmd_synth.cpp) that models.txt uses, applied
// as the command applies them.
SynthModel parse_synth_args(const std::string& name, const std::string& args) {
  SynthModel m;
  m.name = "gemma3-" + name;
  m.args = args;
  m.reference = gemma3_data() / (name + ".json");
  std::istringstream words(args);
  std::vector<std::pair<std::string, std::string>> options;
  for (std::string flag, value; words >> flag >> value;) options.emplace_back(flag, value);
  std::string arch, preset = "tiny";
  for (const auto& [flag, value] : options) {
    if (flag == "--arch") arch = value;
    if (flag == "--preset") preset = value;
  }
  m.config = tools::synth_preset(preset, arch.empty() ? std::nullopt : std::optional<std::string_view>(arch));
  auto u32 = [](const std::string& v) { return static_cast<uint32_t>(std::stoul(v)); };
  bool renamed = false;
  for (const auto& [flag, value] : options) {
    if (flag == "--arch" || flag == "--preset") continue;
    if (flag == "--type") m.type = tools::parse_synth_file_type(value);
    else if (flag == "--seed") m.seed = std::stoull(value);
    else if (flag == "--dim") m.config.n_embd = u32(value), renamed = true;
    else if (flag == "--heads") m.config.n_head = u32(value), renamed = true;
    else if (flag == "--kv-heads") m.config.n_head_kv = u32(value);
    else if (flag == "--head-dim") m.config.head_dim = u32(value);
    else if (flag == "--ffn") m.config.n_ff = u32(value);
    else if (flag == "--layers") m.config.n_layers = u32(value);
    else if (flag == "--window") m.config.sliding_window = u32(value);
    else if (flag == "--rope-base-swa") m.config.rope_freq_base_swa = std::stof(value);
    else if (flag == "--rope-scaling") m.config.rope_scaling_factor = std::stof(value);
    else throw std::runtime_error("models.txt: option " + flag + " is not read by tests/support/synth_models.cpp");
  }
  if (renamed) m.config.name = "custom " + m.config.arch + " (synthetic)";
  return m;
}

}  // namespace

const std::vector<SynthModel>& gemma3_synth_models() {
  static const std::vector<SynthModel> models = [] {
    std::vector<SynthModel> list;
    std::ifstream in(gemma3_data() / "models.txt");
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream words(line);
      std::string name, args;
      words >> name;
      std::getline(words, args);
      list.push_back(parse_synth_args(name, args));
    }
    return list;
  }();
  return models;
}

const SynthModel& gemma3_synth_model(const std::string& name) {
  for (const auto& m : gemma3_synth_models())
    if (m.name == name) return m;
  throw std::runtime_error("no synthetic model " + name + " in tests/data/gemma3/models.txt");
}

std::vector<ReferenceModel> gemma3_reference_models() {
  std::vector<ReferenceModel> out;
  for (const auto& m : gemma3_synth_models()) {
    ReferenceModel r;
    r.name = m.name;
    r.reference = m.reference;
    r.synth_args = m.args;
    out.push_back(std::move(r));
  }
  return out;
}

gguf::File open_synth_model(const SynthModel& m) {
  return gguf::File::from_bytes(tools::synth_model_bytes(m.config, m.type, m.seed), m.name + ".gguf");
}

std::filesystem::path write_synth_model(const SynthModel& m, const std::filesystem::path& dir) {
  const auto path = dir / (m.name + ".gguf");
  tools::write_synth_model(m.config, m.type, m.seed, path.string());
  return path;
}

bool make_synth_model(const std::string& args, const std::filesystem::path& dir, const std::string& file,
                      std::string* error) {
  const auto path = dir / file;
  const CommandResult r = run_command(rayo_binary().string() + " synth " + args + " -o '" + path.string() + "'");
  if (r.exit_code == 0 && std::filesystem::is_regular_file(path)) return true;
  *error = "rayo synth " + args + " failed: " + r.output;
  return false;
}

}  // namespace rayo::test
