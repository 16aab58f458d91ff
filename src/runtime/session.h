#pragma once
// A session: one token sequence on a step engine whose whole KV cache it owns.
// Its step graphs are decode (one token) and prefill (up to n_batch tokens);
// it appends tokens and returns logits or a sampled token.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "graph/backend.h"
#include "graph/executor.h"
#include "runtime/backend_choice.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "runtime/step_engine.h"

namespace rayo::runtime {

struct SessionOptions {
  int64_t n_ctx = 0;      // context length; 0 = the model's training context, at most 4096
  int64_t n_batch = 512;  // prompt tokens per prefill step
  BackendChoice backend;  // where it runs (--device, -t, --kv-type, --no-graph, --verbose)
};

// The context a caller's n_ctx asks for: 0 is the model's training context,
// and a larger request is cut to it (as llama.cpp's -c is).
int64_t requested_context(int64_t n_ctx, const models::ModelSpec& spec);

class Session {
 public:
  Session(std::shared_ptr<const Model> model, const SessionOptions& options);
  ~Session();

  const Model& model() const { return *model_; }
  int64_t n_ctx() const { return n_ctx_; }
  int64_t n_past() const { return n_past_; }
  // The tokens whose keys and values the cache holds (n_past of them).
  std::span<const int32_t> tokens() const { return tokens_; }
  int n_threads() const { return engine_.choice().n_threads; }
  // "cpu" or "cuda": where this session runs.
  std::string_view device() const { return engine_.backend().name(); }
  int64_t n_vocab() const { return model_->spec().n_vocab; }

  // Appends tokens at the end of the sequence (prefill in chunks of n_batch) and
  // returns the logits after the last one. Throws if they do not fit the context.
  std::span<const float> eval(std::span<const int32_t> tokens);
  // Appends tokens as eval does and draws the next token from the logits after
  // the last one with `sampler` (which does not record it: call accept). The
  // backend samples when it can (the step then brings back one id instead of
  // the logits: the CUDA backend's sampling chain), else the host does; the
  // draw and the sampler's random stream are the same either way.
  int32_t eval_sample(std::span<const int32_t> tokens, Sampler& sampler);
  // Same as eval, returning the logits after every token (n_tokens x n_vocab), for perplexity.
  std::vector<float> eval_all(std::span<const int32_t> tokens);

  // Forgets positions n.. so that the next tokens continue from position n
  // (reusing a common prompt prefix between chat turns). A model whose
  // sliding-window layers keep rings evaluates the first n tokens again when
  // its rings no longer hold the window before n.
  void rewind(int64_t n);
  // Keeps the cache for the longest prefix `prompt` shares with tokens(), but
  // leaves at least one prompt token to evaluate (for its logits); returns how
  // many it kept: evaluate prompt[kept..] next. A chat turn resends the
  // conversation so far, which is then not evaluated again.
  size_t keep_prefix(std::span<const int32_t> prompt);

  // Dispatch counts, for tests and --verbose.
  const graph::Executor& decode_executor();
  // The backend the session runs on (for its counters and measurements).
  graph::Backend& backend() { return engine_.backend(); }
  // Its KV cache: pools, and the rings of sliding-window layers.
  const graph::KvCacheConfig& kv_config() const { return engine_.kv_config(); }

 private:
  graph::Executor& executor(int64_t max_tokens, int64_t max_outputs);
  graph::Executor& executor_for(size_t n_tokens);  // decode for one token, else the prompt graph
  // One step of tokens at the end of the sequence, with logits for `outputs`,
  // or the token `sampler` draws after the last one.
  int32_t step(graph::Executor& ex, std::span<const int32_t> tokens, std::span<const int32_t> outputs,
               Sampler* sampler = nullptr);
  // Runs all but the last chunk of tokens; returns the last chunk.
  std::span<const int32_t> eval_prefix(std::span<const int32_t> tokens);
  void check_fits(size_t n_tokens) const;

  std::shared_ptr<const Model> model_;
  SessionOptions options_;
  int64_t n_ctx_ = 0;
  StepEngine engine_;
  std::vector<int32_t> block_table_;  // this sequence owns every block of the cache, in order
  int64_t n_past_ = 0;
  std::vector<int32_t> tokens_;  // the first n_past_ are in the cache
  int64_t ring_floor_ = 0;       // the oldest position the rings still hold (when there are rings)
};

}  // namespace rayo::runtime
