// rayo chat: an interactive conversation with the model's own chat template.
// Every turn re-renders the whole conversation; the tokens it shares with what
// is already in the KV cache are kept, so only the new turn is evaluated.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/options.h"
#include "common/error.h"
#include "runtime/generation.h"
#include "runtime/chat_format.h"
#include "tokenizer/chat_template.h"

namespace rayo::cli {
namespace {

struct ChatOptions {
  ModelOptions model;
  runtime::SamplingParams sampling;
  std::string system;
  int64_t n_predict = -1;
};

void run(const ChatOptions& o) {
  if (o.n_predict < -1) fail("-n must be -1 (until the end of the answer) or a token count, got ", o.n_predict);
  auto model = load_model(o.model);
  runtime::Session session(model, session_options(o.model, *model));
  const auto& tok = model->tokenizer();
  const runtime::ChatFormat format = runtime::chat_format(*model);
  if (!format.fallback.empty())
    std::fprintf(stderr, "the model has no chat template; using the %s format\n", format.fallback.c_str());

  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
  runtime::Sampler sampler(o.sampling, session.n_vocab());
  runtime::GenerationOptions g;
  g.max_tokens = o.n_predict;
  const bool interactive = isatty(STDIN_FILENO);
  if (interactive) std::fprintf(stderr, "chatting with %s; Ctrl-D or /exit to leave\n", o.model.model.c_str());

  std::string line;
  while (true) {
    if (interactive) {
      std::fprintf(stderr, "\n> ");
      std::fflush(stderr);
    }
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit") break;
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    std::vector<int32_t> tokens;
    try {
      const std::string prompt = tokenizer::apply_chat_template(format.source, messages, format.options);
      const bool add_bos = tok.add_bos() && format.needs_bos(prompt);
      tokens = tok.encode(prompt, add_bos, true);
      if (static_cast<int64_t>(tokens.size()) >= session.n_ctx())
        fail("the conversation is ", tokens.size(), " tokens, more than the context of ", session.n_ctx(),
             " (raise -c)");
    } catch (const Error& e) {
      messages.erase(messages.end() - 1);
      std::fprintf(stderr, "rayo: error: %s\n", e.what());
      continue;
    }
    // The conversation so far is in the cache: evaluate what follows it.
    const size_t keep = session.keep_prefix(tokens);
    const std::vector<int32_t> suffix(tokens.begin() + static_cast<std::ptrdiff_t>(keep), tokens.end());
    auto result = runtime::generate(session, sampler, suffix, g, [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      return true;
    });
    std::printf("\n");
    std::fflush(stdout);
    messages.push_back({{"role", "assistant"}, {"content", result.text}});
  }
}

void setup(CLI::App& root) {
  auto o = std::make_shared<ChatOptions>();
  auto* cmd = root.add_subcommand("chat", "Chat interactively, with the model's chat template");
  add_model_options(cmd, o->model);
  cmd->add_option("--system", o->system, "system prompt");
  cmd->add_option("-n,--n-predict", o->n_predict, "tokens per answer at most (-1: until the end of the answer)")
      ->capture_default_str();
  add_sampling_options(cmd, o->sampling);
  cmd->callback([o] { run(*o); });
}

}  // namespace

RAYO_COMMAND(chat, 11, setup);

}  // namespace rayo::cli
