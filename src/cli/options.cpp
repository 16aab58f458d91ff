#include "cli/options.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/strings.h"

namespace rayo::cli {

void add_model_options(CLI::App* app, ModelOptions& o, bool model_required) {
  auto* m = app->add_option("-m,--model", o.model, "GGUF model file (bench: or a Whisper model, a CTranslate2 folder or a whisper.cpp ggml-*.bin file)");
  if (model_required) m->required();
  app->add_option("-t,--threads", o.threads, "CPU threads (default: physical cores)");
  app->add_option("-c,--ctx-size", o.ctx, "context length in tokens (0: the model's training context)")
      ->capture_default_str();
  app->add_option("-b,--batch-size", o.batch, "prompt tokens evaluated per step")->capture_default_str();
  app->add_option("--kv-type", o.kv_type, "KV cache element type: f16 or f32")->capture_default_str();
  app->add_option("--device", o.device, "auto (CUDA when a GPU is usable), cpu or cuda")->capture_default_str();
  app->add_flag("--no-graph", o.no_graph, "CUDA: launch kernels one by one instead of replaying a CUDA graph");
  app->add_flag("--programmatic-launch", o.programmatic_launch,
                "CUDA sm_90+, experimental: schedule each kernel's blocks while the previous kernel ends "
                "(programmatic dependent launch; on an H100 decode +3% on qwen2.5-1.5b, -1% on llama3-8b)");
  app->add_flag("--verbose", o.verbose, "print the compute graph and its buffer plan");
}

void add_sampling_options(CLI::App* app, runtime::SamplingParams& p) {
  app->add_option("--temp", p.temperature, "temperature; 0 = greedy")->capture_default_str();
  app->add_option("--top-k", p.top_k, "keep the k most likely tokens (0 = all)")->capture_default_str();
  app->add_option("--top-p", p.top_p, "keep the most likely tokens up to this probability mass (1 = off)")
      ->capture_default_str();
  app->add_option("--min-p", p.min_p, "drop tokens less likely than min-p times the most likely (0 = off)")
      ->capture_default_str();
  app->add_option("--repeat-penalty", p.repeat_penalty, "penalise repeated tokens (1 = off)")->capture_default_str();
  app->add_option("--repeat-last-n", p.repeat_last_n, "tokens the penalties look back over (-1 = all, 0 = off)")
      ->capture_default_str();
  app->add_option("--presence-penalty", p.presence_penalty, "subtracted from tokens already present (0 = off)")
      ->capture_default_str();
  app->add_option("--frequency-penalty", p.frequency_penalty, "subtracted per occurrence (0 = off)")
      ->capture_default_str();
  app->add_option("-s,--seed", p.seed, "random seed (default: random)");
}

std::shared_ptr<const runtime::Model> load_model(const ModelOptions& o) {
  const bool tty = isatty(STDERR_FILENO);
  if (tty) std::fprintf(stderr, "loading %s ...", o.model.c_str());
  auto model = runtime::Model::load(o.model);
  if (tty) {
    const auto& s = model->spec();
    std::fprintf(stderr, "\rloaded %s: %s, %u layers, width %u, %s of weights\n", o.model.c_str(), s.arch.c_str(),
                 s.n_layers, s.n_embd, format_bytes(model->weight_bytes()).c_str());
  }
  return model;
}

runtime::SessionOptions session_options(const ModelOptions& o, const runtime::Model& model) {
  if (o.ctx < 0) fail("-c must be 0 (the model's training context) or a positive number of tokens, got ", o.ctx);
  if (o.batch <= 0) fail("-b must be a positive number of tokens, got ", o.batch);
  if (o.threads < 0) fail("-t must be a positive number of threads, got ", o.threads);
  runtime::SessionOptions s;
  s.n_ctx = runtime::requested_context(o.ctx, model.spec());
  s.n_batch = o.batch;
  s.backend = backend_choice(o);
  return s;
}

runtime::BackendChoice backend_choice(const ModelOptions& o) {
  if (o.threads < 0) fail("-t must be a positive number of threads, got ", o.threads);
  runtime::BackendChoice b;
  b.n_threads = o.threads;
  b.verbose = o.verbose;
  b.device = o.device;
  b.cuda_graphs = !o.no_graph;
  b.programmatic_launch = o.programmatic_launch;
  if (o.kv_type == "f16")
    b.kv_type = graph::KvType::F16;
  else if (o.kv_type == "f32")
    b.kv_type = graph::KvType::F32;
  else
    fail("--kv-type must be f16 or f32, got ", quote_for_message(o.kv_type));
  return b;
}

std::string read_prompt(const std::string& prompt, const std::string& file) {
  if (!prompt.empty() && !file.empty()) fail("give the prompt with -p or -f, not both");
  std::string text = prompt;
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(file, ": cannot read the prompt file");
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  if (text.empty()) fail("the prompt is empty: give one with -p TEXT or -f FILE");
  return text;
}

}  // namespace rayo::cli
