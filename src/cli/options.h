#pragma once
// Flags shared by the subcommands that load a model (run, chat, bench,
// perplexity, serve), spelled as llama.cpp spells them.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "runtime/backend_choice.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "runtime/session.h"

namespace rayo::cli {

struct ModelOptions {
  std::string model;        // -m
  int threads = 0;          // -t (0: physical cores)
  int64_t ctx = 4096;       // -c (0: the model's training context)
  int64_t batch = 512;      // -b
  std::string kv_type = "f16";
  std::string device = "auto";
  bool no_graph = false;
  bool verbose = false;
  bool programmatic_launch = false;
};

// -m (required unless model_required is false), -t, -c, -b, --kv-type,
// --device, --no-graph, --programmatic-launch, --verbose.
void add_model_options(CLI::App* app, ModelOptions& options, bool model_required = true);
// --temp, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n,
// --presence-penalty, --frequency-penalty, --seed.
void add_sampling_options(CLI::App* app, runtime::SamplingParams& params);

// Loads the model, saying so on stderr (quietly when stderr is not a terminal).
std::shared_ptr<const runtime::Model> load_model(const ModelOptions& options);
// The backend the flags ask for (-t, --device, --kv-type, --no-graph, --verbose).
runtime::BackendChoice backend_choice(const ModelOptions& options);
// Session options from the flags; -c is clamped to the model's training context.
runtime::SessionOptions session_options(const ModelOptions& options, const runtime::Model& model);

// The text of -p or of -f FILE (exactly one of them); empty prompts are refused.
std::string read_prompt(const std::string& prompt, const std::string& file);

}  // namespace rayo::cli
