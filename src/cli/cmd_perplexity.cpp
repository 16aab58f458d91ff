// rayo perplexity: llama.cpp's method. The text is tokenized once (with BOS where
// the model asks for it) and cut into chunks of -c tokens; each chunk is
// evaluated from an empty cache with its first token replaced by BOS, and the
// negative log-likelihood is averaged over the second half of every chunk.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/command.h"
#include "cli/options.h"
#include "common/error.h"

namespace rayo::cli {
namespace {

struct PerplexityOptions {
  ModelOptions model;
  std::string file;
  int64_t max_chunks = -1;
};

// -log softmax(logits)[target], in double.
double negative_log_likelihood(const float* logits, int64_t n_vocab, int32_t target) {
  float max_logit = logits[0];
  for (int64_t i = 1; i < n_vocab; ++i) max_logit = std::max(max_logit, logits[i]);
  double sum = 0;
  for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - max_logit));
  return std::log(sum) - static_cast<double>(logits[target] - max_logit);
}

void run(PerplexityOptions o) {
  std::ifstream in(o.file, std::ios::binary);
  if (!in) fail(o.file, ": cannot read the text file");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (o.model.ctx <= 0) fail("perplexity needs a positive -c (chunk length), got ", o.model.ctx);
  if (o.model.ctx < 4) fail("-c must be at least 4 tokens for perplexity");
  auto model = load_model(o.model);
  auto sopts = session_options(o.model, *model);
  const int64_t n_ctx = o.model.ctx;  // the chunk length is exactly -c, even beyond the training context
  sopts.n_ctx = n_ctx;
  sopts.n_batch = std::max<int64_t>(sopts.n_batch, n_ctx);
  runtime::Session session(model, sopts);
  const auto& tok = model->tokenizer();
  const bool add_bos = tok.add_bos();
  const std::vector<int32_t> tokens = tok.encode(text, add_bos, false);
  if (static_cast<int64_t>(tokens.size()) < 2 * n_ctx)
    fail("the text is ", tokens.size(), " tokens; perplexity with -c ", n_ctx, " needs at least ", 2 * n_ctx);
  int64_t n_chunks = static_cast<int64_t>(tokens.size()) / n_ctx;
  if (o.max_chunks > 0) n_chunks = std::min(n_chunks, o.max_chunks);
  std::fprintf(stderr, "perplexity: %zu tokens, %lld chunks of %lld, scoring the second half of each\n", tokens.size(),
               static_cast<long long>(n_chunks), static_cast<long long>(n_ctx));

  const int64_t n_vocab = session.n_vocab();
  const int64_t first = n_ctx / 2;
  double nll = 0, nll2 = 0;
  int64_t count = 0;
  std::vector<int32_t> chunk(n_ctx);
  for (int64_t c = 0; c < n_chunks; ++c) {
    std::copy(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx, chunk.begin());
    if (add_bos) chunk[0] = tok.bos();
    session.rewind(0);
    const std::vector<float> logits = session.eval_all(chunk);
    for (int64_t j = first; j < n_ctx - 1; ++j) {
      const double v = negative_log_likelihood(logits.data() + j * n_vocab, n_vocab, chunk[j + 1]);
      nll += v;
      nll2 += v * v;
      ++count;
    }
    std::printf("[%lld]%.4f,", static_cast<long long>(c + 1), std::exp(nll / count));
    std::fflush(stdout);
  }
  std::printf("\n");
  const double mean = nll / count;
  const double ppl = std::exp(mean);
  const double var = nll2 / count - mean * mean;
  const double err = var > 0 && count > 1 ? std::sqrt(var / (count - 1)) * ppl : 0.0;
  std::printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, err);
}

void setup(CLI::App& root) {
  auto o = std::make_shared<PerplexityOptions>();
  o->model.ctx = 512;
  auto* cmd = root.add_subcommand("perplexity", "Measure perplexity on a text file (llama.cpp's method)");
  add_model_options(cmd, o->model);
  cmd->add_option("-f,--file", o->file, "text file")->required();
  cmd->add_option("--chunks", o->max_chunks, "evaluate at most this many chunks (default: all)");
  cmd->callback([o] { run(*o); });
}

}  // namespace

RAYO_COMMAND(perplexity, 21, setup);

}  // namespace rayo::cli
