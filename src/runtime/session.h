#pragma once
// A session: one token sequence on one backend. It owns the KV cache and the
// step graphs (decode: one token; prefill: up to n_batch tokens), appends
// tokens and returns logits.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "graph/backend.h"
#include "graph/executor.h"
#include "runtime/model.h"
#include "runtime/sampler.h"

namespace rayo::runtime {

struct SessionOptions {
  int64_t n_ctx = 0;      // context length; 0 = the model's training context, at most 4096
  int64_t n_batch = 512;  // prompt tokens per prefill step
  int n_threads = 0;      // 0 = physical cores
  graph::KvType kv_type = graph::KvType::F16;
  bool verbose = false;   // print the graph and buffer plan on stderr
  // "auto": CUDA when a GPU is usable, else the CPU; "cpu"; "cuda" (falls back
  // to the CPU with a one-line message when no GPU is usable).
  std::string device = "auto";
  bool cuda_graphs = true;  // false: launch CUDA kernels one by one (--no-graph)
  bool fuse = true;         // CPU: run fused ops (same numbers, fewer pool runs); false: one node per op
};

class Session {
 public:
  Session(std::shared_ptr<const Model> model, const SessionOptions& options);
  ~Session();

  const Model& model() const { return *model_; }
  int64_t n_ctx() const { return n_ctx_; }
  int64_t n_past() const { return n_past_; }
  int n_threads() const { return n_threads_; }
  // "cpu" or "cuda": where this session runs.
  std::string_view device() const { return backend_->name(); }
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
  // (reusing a common prompt prefix between chat turns).
  void rewind(int64_t n);

  // Dispatch counts, for tests and --verbose.
  const graph::Executor& decode_executor();
  // The backend the session runs on (for its counters and measurements).
  graph::Backend& backend() { return *backend_; }

 private:
  graph::Executor& executor(int64_t max_tokens, int64_t max_outputs);
  graph::Executor& executor_for(size_t n_tokens);  // decode for one token, else the prompt graph
  // One step of tokens at the end of the sequence; `sample`: requests for its output rows, or empty.
  void step(graph::Executor& ex, std::span<const int32_t> tokens, std::span<const int32_t> rows,
            std::span<const graph::SampleRequest> sample = {});
  // Runs all but the last chunk of tokens; returns the last chunk.
  std::span<const int32_t> eval_prefix(std::span<const int32_t> tokens);
  void check_fits(size_t n_tokens) const;

  std::shared_ptr<const Model> model_;
  SessionOptions options_;
  int64_t n_ctx_ = 0;
  int n_threads_ = 0;
  std::unique_ptr<graph::Backend> backend_;
  std::vector<int32_t> block_table_;  // this sequence owns every block of the cache, in order
  std::vector<std::unique_ptr<graph::Executor>> executors_;
  int64_t n_past_ = 0;
};

// Physical cores of this machine (what -t defaults to).
int default_thread_count();

}  // namespace rayo::runtime
