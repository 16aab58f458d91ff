// rayo run: generate text from a prompt, streamed as it is produced.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/options.h"
#include "common/error.h"
#include "runtime/generation.h"

namespace rayo::cli {
namespace {

struct RunOptions {
  ModelOptions model;
  runtime::SamplingParams sampling;
  std::string prompt, prompt_file;
  int64_t n_predict = -1;
  std::vector<std::string> stop;
  bool json = false, ignore_eos = false, show_special = false, no_bos = false;
};

void run(const RunOptions& o) {
  if (o.n_predict < -1) fail("-n must be -1 (until the end of generation) or a token count, got ", o.n_predict);
  const std::string prompt = read_prompt(o.prompt, o.prompt_file);
  auto model = load_model(o.model);
  runtime::Session session(model, session_options(o.model, *model));
  const auto& tok = model->tokenizer();
  std::vector<int32_t> tokens = tok.encode(prompt, !o.no_bos, true);
  if (tokens.empty()) fail("the prompt has no tokens");
  if (static_cast<int64_t>(tokens.size()) >= session.n_ctx())
    fail("the prompt is ", tokens.size(), " tokens, which does not fit the context of ", session.n_ctx(),
         " with room to generate (raise -c)");
  runtime::Sampler sampler(o.sampling, session.n_vocab());
  runtime::GenerationOptions g;
  g.max_tokens = o.n_predict;
  g.stop = o.stop;
  g.ignore_eos = o.ignore_eos;
  g.show_special = o.show_special;

  runtime::TextCallback stream;
  if (!o.json)
    stream = [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      return true;
    };
  const auto result = runtime::generate(session, sampler, tokens, g, stream);
  const double pp_rate = result.prompt_tokens / std::max(result.prompt_seconds, 1e-9);
  const double tg_rate = result.tokens.size() / std::max(result.generate_seconds, 1e-9);
  if (o.json) {
    nlohmann::json j;
    j["prompt_tokens"] = tokens;
    j["tokens"] = result.tokens;
    j["text"] = result.text;
    j["finish_reason"] = runtime::finish_reason_name(result.finish);
    j["seed"] = sampler.seed();
    j["timings"] = {{"prompt_n", result.prompt_tokens},
                    {"prompt_ms", result.prompt_seconds * 1e3},
                    {"prompt_per_second", pp_rate},
                    {"predicted_n", result.tokens.size()},
                    {"predicted_ms", result.generate_seconds * 1e3},
                    {"predicted_per_second", tg_rate}};
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return;
  }
  std::printf("\n");
  std::fflush(stdout);
  std::fprintf(stderr, "[prompt: %lld tokens, %.1f tokens/s | generation: %zu tokens, %.1f tokens/s | %s]\n",
               static_cast<long long>(result.prompt_tokens), pp_rate, result.tokens.size(), tg_rate,
               std::string(runtime::finish_reason_name(result.finish)).c_str());
}

void setup(CLI::App& root) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = root.add_subcommand("run", "Generate text from a prompt");
  add_model_options(cmd, o->model);
  cmd->add_option("-p,--prompt", o->prompt, "prompt text (special tokens such as <|im_start|> are recognised)");
  cmd->add_option("-f,--file", o->prompt_file, "read the prompt from a file");
  cmd->add_option("-n,--n-predict", o->n_predict, "tokens to generate (-1: until end of generation or context)")
      ->capture_default_str();
  add_sampling_options(cmd, o->sampling);
  cmd->add_option("--stop", o->stop, "stop when this text is generated (repeatable)");
  cmd->add_flag("--ignore-eos", o->ignore_eos, "do not stop at end-of-generation tokens");
  cmd->add_flag("--show-special", o->show_special, "print special tokens");
  cmd->add_flag("--no-bos", o->no_bos, "do not add the model's beginning-of-sequence token");
  cmd->add_flag("--json", o->json, "print one JSON object (token ids, text, timings) instead of streaming");
  cmd->callback([o] { run(*o); });
}

}  // namespace

RAYO_COMMAND(run, 10, setup);

}  // namespace rayo::cli
