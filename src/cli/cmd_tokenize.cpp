// rayo tokenize: show how a model's tokenizer cuts a text into tokens.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

#include "cli/command.h"
#include "common/error.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace rayo::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string file;
  bool ids_only = false;
  bool pieces_only = false;
  bool no_bos = false;
  bool parse_special = false;
};

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read ", quote_for_message(path));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void run_tokenize(const TokenizeOptions& o) {
  const std::string text = o.file.empty() ? o.text : read_text_file(o.file);
  const gguf::File file = gguf::File::open(o.model);
  const auto tok = tokenizer::Tokenizer::from_gguf(file);
  const std::vector<int32_t> ids = tok.encode(text, /*add_special=*/!o.no_bos, o.parse_special);

  std::string out;
  if (o.ids_only) {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) out += ' ';
      out += std::to_string(ids[i]);
    }
    out += '\n';
  } else {
    for (int32_t id : ids) {
      if (!o.pieces_only) out += std::to_string(id) + '\t';
      out += '\'' + tok.token_to_piece(id, /*special=*/true) + "'\n";
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void setup(CLI::App& root) {
  auto o = std::make_shared<TokenizeOptions>();
  auto* cmd = root.add_subcommand("tokenize", "Show the tokens of a text (one per line: id<TAB>'piece')");
  cmd->add_option("-m,--model", o->model, "GGUF file (a vocabulary-only file is enough)")->required();
  cmd->add_option("text", o->text, "Text to tokenize");
  cmd->add_option("-f,--file", o->file, "Read the text from this file");
  auto* ids = cmd->add_flag("--ids", o->ids_only, "Print only the ids, space-separated, on one line");
  cmd->add_flag("--pieces", o->pieces_only, "Print only the pieces, one per line")->excludes(ids);
  cmd->add_flag("--no-bos", o->no_bos, "Add no special token (no BOS, no EOS)");
  cmd->add_flag("--parse-special", o->parse_special,
                "Turn special tokens written in the text (<|im_start|>) into their ids");
  cmd->callback([o] {
    if (!o->file.empty() && !o->text.empty()) fail("give either TEXT or -f FILE, not both");
    run_tokenize(*o);
  });
}

}  // namespace

RAYO_COMMAND(tokenize, 60, setup);

}  // namespace rayo::cli
