// rayo template (-m MODEL | --jinja FILE) --messages CONVERSATION.json
//   [--bos-token S] [--eos-token S] [--no-generation-prompt] [--tools FILE]
//   [--var NAME=JSON ...]
// Prints exactly the prompt a conversation renders to with a model's chat
// template (nothing added, no trailing newline), as Hugging Face's
// apply_chat_template would produce it.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "common/error.h"
#include "gguf/file.h"
#include "tokenizer/chat_template.h"

namespace rayo::cli {
namespace {

struct TemplateOptions {
  std::string model;
  std::string jinja;
  std::string messages;
  std::string tools;
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  bool no_generation_prompt = false;
  std::vector<std::string> vars;
};

// Reads a whole file; "-" reads standard input.
std::string read_file(const std::string& path, const char* what) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open ", what, " ", quote_for_message(path));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  if (in.bad()) fail("cannot read ", what, " ", quote_for_message(path));
  return text;
}

nlohmann::ordered_json parse_json_file(const std::string& path, const char* what) {
  std::string text = read_file(path, what);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // nlohmann's message names the byte where parsing stopped.
    fail(what, " ", quote_for_message(path), " is not valid JSON: ", e.what());
  }
}

// The text of the token with the id stored under `id_key`, if the model has one.
std::optional<std::string> special_token_text(const gguf::File& f, std::string_view id_key) {
  auto id = f.get_optional<uint64_t>(id_key);
  if (!id) return std::nullopt;
  const gguf::Value* tokens = f.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type() != gguf::ValueType::ARRAY || *id >= tokens->size()) return std::nullopt;
  return std::string(tokens->at(*id).as_string());
}

void run(const TemplateOptions& opt) {
  if (opt.model.empty() == opt.jinja.empty()) fail("give exactly one of -m MODEL and --jinja FILE");
  tokenizer::ChatTemplateOptions options;
  std::string source;
  if (!opt.jinja.empty()) {
    source = read_file(opt.jinja, "template file");
  } else {
    gguf::File f = gguf::File::open(opt.model);
    if (auto text = f.get_optional<std::string_view>("tokenizer.chat_template")) {
      source = std::string(*text);
    } else {
      std::string arch(f.get_optional<std::string_view>("general.architecture").value_or(""));
      auto fallback = tokenizer::default_chat_template(arch);
      std::fprintf(stderr, "rayo: %s has no chat template; using the default %s template\n", opt.model.c_str(),
                   fallback.name.c_str());
      source = fallback.source;
    }
    options.bos_token = special_token_text(f, "tokenizer.ggml.bos_token_id").value_or("");
    options.eos_token = special_token_text(f, "tokenizer.ggml.eos_token_id").value_or("");
  }
  if (opt.bos_token) options.bos_token = *opt.bos_token;
  if (opt.eos_token) options.eos_token = *opt.eos_token;
  options.add_generation_prompt = !opt.no_generation_prompt;
  if (!opt.tools.empty()) options.tools = parse_json_file(opt.tools, "tools file");
  for (const auto& var : opt.vars) {
    size_t eq = var.find('=');
    if (eq == std::string::npos || eq == 0) fail("--var needs NAME=JSON, got ", quote_for_message(var));
    try {
      options.extra_context[var.substr(0, eq)] = nlohmann::ordered_json::parse(var.substr(eq + 1));
    } catch (const nlohmann::json::exception&) {
      // A bare word is taken as a string: --var date_string=today.
      options.extra_context[var.substr(0, eq)] = var.substr(eq + 1);
    }
  }
  nlohmann::ordered_json messages = parse_json_file(opt.messages, "messages file");
  std::string prompt = tokenizer::apply_chat_template(source, messages, options);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
}

void setup(CLI::App& root) {
  auto opt = std::make_shared<TemplateOptions>();
  auto* cmd = root.add_subcommand("template", "Render a conversation with a chat template and print the prompt");
  auto* model = cmd->add_option("-m,--model", opt->model, "GGUF model whose tokenizer.chat_template to use");
  auto* jinja = cmd->add_option("--jinja", opt->jinja, "Jinja chat template file");
  model->excludes(jinja);
  cmd->add_option("--messages", opt->messages, "Conversation: JSON list of {role, content} ('-' for stdin)")->required();
  cmd->add_option("--bos-token", opt->bos_token, "bos_token text (default: the model's, or empty)");
  cmd->add_option("--eos-token", opt->eos_token, "eos_token text (default: the model's, or empty)");
  cmd->add_flag("--no-generation-prompt", opt->no_generation_prompt, "Do not open an assistant turn at the end");
  cmd->add_option("--tools", opt->tools, "JSON file with tool definitions (the template's `tools`)");
  cmd->add_option("--var", opt->vars, "Extra template variable NAME=JSON, e.g. enable_thinking=false");
  cmd->callback([opt] { run(*opt); });
}

}  // namespace

RAYO_COMMAND(template, 40, setup);

}  // namespace rayo::cli
