#include "runtime/session.h"

#include <algorithm>
#include <numeric>

#include "common/error.h"

namespace rayo::runtime {
namespace {

constexpr int64_t kBlockSize = 16;

// -c 0 means the model's training context, at most 4096 (a default that fits
// any machine); checked before anything is allocated.
int64_t context_length(const SessionOptions& options, const models::ModelSpec& spec) {
  if (options.n_ctx < 0) fail("context length must be positive, got ", options.n_ctx);
  if (options.n_batch <= 0) fail("batch size must be positive, got ", options.n_batch);
  return options.n_ctx > 0 ? options.n_ctx : std::min<int64_t>(spec.n_ctx_train > 0 ? spec.n_ctx_train : 4096, 4096);
}

}  // namespace

int64_t requested_context(int64_t n_ctx, const models::ModelSpec& spec) {
  const int64_t train = spec.n_ctx_train;
  return n_ctx == 0 ? train : std::min<int64_t>(n_ctx, train > 0 ? train : n_ctx);
}

Session::Session(std::shared_ptr<const Model> model, const SessionOptions& options)
    : model_(std::move(model)),
      options_(options),
      n_ctx_(context_length(options, model_->spec())),
      engine_(model_, options.backend, kBlockSize, (n_ctx_ + kBlockSize - 1) / kBlockSize, n_ctx_,
              RingShape{1, std::min(options.n_batch, n_ctx_)}) {
  options_.n_batch = std::min(options.n_batch, n_ctx_);
  block_table_.resize(engine_.kv_config().n_blocks);
  std::iota(block_table_.begin(), block_table_.end(), 0);
  // Build the decode graph now: preparing it repacks / uploads every weight,
  // which belongs to loading, not to the first prompt's time.
  executor(1, 1);
}

Session::~Session() = default;

graph::Executor& Session::executor(int64_t max_tokens, int64_t max_outputs) {
  return engine_.graph(graph::GraphConfig{max_tokens, max_outputs});
}

const graph::Executor& Session::decode_executor() { return executor(1, 1); }

void Session::check_fits(size_t n_tokens) const {
  if (n_tokens == 0) fail("no tokens to evaluate");
  if (n_past_ + static_cast<int64_t>(n_tokens) > n_ctx_)
    fail("the sequence would be ", n_past_ + static_cast<int64_t>(n_tokens), " tokens, longer than the context of ",
         n_ctx_, " (raise -c)");
}

std::span<const int32_t> Session::eval_prefix(std::span<const int32_t> tokens) {
  check_fits(tokens.size());
  const size_t batch = static_cast<size_t>(options_.n_batch);
  const int32_t last = 0;
  while (tokens.size() > batch) {
    step(executor(options_.n_batch, 1), tokens.first(batch), std::span<const int32_t>(&last, 1));
    tokens = tokens.subspan(batch);
  }
  return tokens;
}

graph::Executor& Session::executor_for(size_t n_tokens) {
  return n_tokens == 1 ? executor(1, 1) : executor(options_.n_batch, 1);
}

std::span<const float> Session::eval(std::span<const int32_t> tokens) {
  const auto chunk = eval_prefix(tokens);
  graph::Executor& ex = executor_for(chunk.size());
  const int32_t last = static_cast<int32_t>(chunk.size() - 1);
  step(ex, chunk, std::span<const int32_t>(&last, 1));
  return ex.logits();
}

int32_t Session::eval_sample(std::span<const int32_t> tokens, Sampler& sampler) {
  const auto chunk = eval_prefix(tokens);
  const int32_t last = static_cast<int32_t>(chunk.size() - 1);
  return step(executor_for(chunk.size()), chunk, std::span<const int32_t>(&last, 1), &sampler);
}

std::vector<float> Session::eval_all(std::span<const int32_t> tokens) {
  check_fits(tokens.size());
  const int64_t n_vocab = this->n_vocab();
  std::vector<float> all;
  all.reserve(tokens.size() * static_cast<size_t>(n_vocab));
  std::vector<int32_t> rows;
  for (size_t start = 0; start < tokens.size();) {
    const size_t n = std::min<size_t>(tokens.size() - start, static_cast<size_t>(options_.n_batch));
    graph::Executor& ex = executor(options_.n_batch, options_.n_batch);
    rows.resize(n);
    std::iota(rows.begin(), rows.end(), 0);
    step(ex, tokens.subspan(start, n), rows);
    auto logits = ex.logits();
    all.insert(all.end(), logits.begin(), logits.end());
    start += n;
  }
  return all;
}

int32_t Session::step(graph::Executor& ex, std::span<const int32_t> tokens, std::span<const int32_t> outputs,
                      Sampler* sampler) {
  std::vector<int32_t> positions(tokens.size()), seq(tokens.size(), 0);
  std::iota(positions.begin(), positions.end(), static_cast<int32_t>(n_past_));
  const int32_t ring_start = engine_.ring_start(0);
  const StepRows rows{tokens, positions, seq, outputs, block_table_, static_cast<int32_t>(block_table_.size()),
                      std::span<const int32_t>(&ring_start, 1)};
  Sampler* const samplers[] = {sampler};
  const auto ids = engine_.run(ex, rows, sampler ? std::span<Sampler* const>(samplers) : std::span<Sampler* const>());
  n_past_ += static_cast<int64_t>(tokens.size());
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  if (engine_.has_rings()) ring_floor_ = std::max(ring_floor_, n_past_ - engine_.ring_positions());
  return ids.empty() ? -1 : ids[0];
}

void Session::rewind(int64_t n) {
  if (n < 0 || n > n_past_) fail("cannot rewind to position ", n, " of ", n_past_);
  n_past_ = n;  // later positions are overwritten before they are read again
  tokens_.resize(static_cast<size_t>(n));
  // The sliding-window layers' rings have dropped the window before n: the
  // tokens so far are evaluated again (as llama.cpp does with its SWA cache).
  const int64_t window = model_->spec().sliding_window;
  if (engine_.has_rings() && n > 0 && std::max<int64_t>(0, n - window + 1) < ring_floor_) {
    const std::vector<int32_t> kept = std::move(tokens_);
    n_past_ = 0;
    tokens_.clear();
    ring_floor_ = 0;
    eval(kept);
  }
  if (n == 0) ring_floor_ = 0;
}

size_t Session::keep_prefix(std::span<const int32_t> prompt) {
  size_t n = 0;
  while (n < tokens_.size() && n + 1 < prompt.size() && tokens_[n] == prompt[n]) ++n;
  rewind(static_cast<int64_t>(n));
  return n;
}

}  // namespace rayo::runtime
