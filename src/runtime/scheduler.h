#pragma once
// Continuous batching over a paged KV cache: many sequences in flight on one
// backend, scheduled one iteration (graph step) at a time, as in Orca, with
// the cache split into fixed-size blocks as in PagedAttention.
//
// Policy (one scheduler thread):
//  * Admission happens between steps, first come first served. A request is
//    admitted when a sequence slot is free (at most max_seqs run at once) and
//    the block allocator has blocks for its prompt, plus a little headroom
//    (1% of the pool) for the running sequences to grow into. Decoding takes
//    one more block whenever a sequence crosses into it. When none is left,
//    the youngest running sequence is preempted: its blocks are freed and it
//    returns to the head of the queue, to recompute the positions it had (its
//    prompt and generated tokens, as a prompt without logits) and go on with
//    the token it had sampled (vLLM's preemption by recomputation). The
//    oldest sequence is never preempted for a younger one, so every request
//    ends; nothing a client was sent changes. A request that could not fit
//    the whole pool alone is refused at submit(). The pool is max_seqs full
//    contexts, n_blocks, or what kv_fraction of the GPU's memory leaves once
//    the weights and the step graphs' buffers are allocated (blocks beyond
//    what running sequences hold keep prompt prefixes cached). A request that
//    waits does so in a bounded queue (max_queue); beyond it submit() refuses
//    (HTTP 503).
//  * Prompt prefixes are shared (runtime/prefix_cache.h): the whole blocks of
//    a prompt that an earlier or running request already computed are taken
//    from the cache at admission, with their blocks' reference counts raised,
//    and only the rest of the prompt is evaluated. Blocks nobody holds keep
//    their contents until the allocator needs them for something else.
//  * Every step holds the next token of every decoding sequence plus at most
//    prefill_chunk prompt tokens (of the oldest sequences still reading their
//    prompt), so a long prompt never stalls the streams already running; only
//    rows that end a prompt or decode a token produce logits.
//  * Steps run on graphs built for a few "batch buckets" (max_tokens 1, 2, 4,
//    ... up to max_seqs + prefill_chunk); each step uses the smallest bucket
//    that holds its tokens.
//  * Each request samples with its own Sampler (own seed), stops at an
//    end-of-generation token, a stop string, max_tokens or the context, and
//    streams text as it becomes final. cancel() frees the sequence's blocks at
//    the next step.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "graph/backend.h"
#include "graph/executor.h"
#include "runtime/backend_choice.h"
#include "runtime/batch_stats.h"
#include "runtime/generation.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "runtime/step_engine.h"

namespace rayo::runtime {

struct SchedulerOptions {
  int64_t max_seqs = 4;         // sequences decoded together (--parallel)
  int64_t max_seq_len = 2048;   // context of one sequence (-c)
  int64_t block_size = 16;      // positions per KV cache block
  int64_t n_blocks = 0;         // KV pool; 0: max_seqs full contexts (or kv_fraction)
  double kv_fraction = 0;       // > 0: the pool is what this share of the GPU's memory leaves (--kv-fraction)
  int64_t prefill_chunk = 128;  // prompt tokens per step
  int64_t max_queue = 64;       // requests waiting for admission before submit() refuses
  bool prefix_cache = true;     // reuse the cache blocks of prompt prefixes already computed
  bool batch_invariant = false; // step graphs whose rows compute alike at every size (--batch-invariant)
  BackendChoice backend;        // where the steps run (--device, -t, --kv-type, --no-graph, --verbose)
};

struct Request {
  std::vector<int32_t> prompt;     // token ids, BOS included if wanted
  SamplingParams sampling;
  int64_t max_tokens = -1;         // -1: until end of generation or the context is full
  std::vector<std::string> stop;   // stop strings (not part of the text)
  bool ignore_eos = false;
  int logprobs = -1;               // -1: none; otherwise how many top alternatives (0..20)
};

// What a client sees of its request. The scheduler appends; the client takes.
class RequestStream {
 public:
  struct Update {
    std::string text;                    // new final text
    std::vector<GeneratedToken> tokens;  // tokens generated since the last update
    bool done = false;
    FinishReason finish = FinishReason::Stop;
    int64_t prompt_tokens = 0;
    int64_t cached_prompt_tokens = 0;    // of prompt_tokens, those taken from the prefix cache
    int64_t completion_tokens = 0;
    std::string error;                   // set when the request failed inside the engine
  };

  // Moves everything new into `out` (replacing its contents). Waits up to
  // `timeout` for news; returns false when there was none.
  bool next(Update& out, std::chrono::milliseconds timeout);
  // Waits for the end and returns the whole result. `abandoned`, when given,
  // is asked at every update and at least every 200 ms; once it says yes the
  // request is cancelled (it then ends at the next step, with what it had).
  Update wait(const std::function<bool()>& abandoned = {});

  // Asks the scheduler to stop this request and free its sequence.
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

 private:
  friend class Scheduler;
  void push(std::string_view text, const GeneratedToken* token);
  void finish(FinishReason reason, int64_t prompt_tokens, int64_t completion_tokens, std::string error = {},
              int64_t cached_prompt_tokens = 0);

  std::mutex mutex_;
  std::condition_variable cv_;
  Update pending_;
  bool news_ = false;
  std::atomic<bool> cancelled_{false};
};

// Why submit() refused a request.
struct SubmitError : Error {
  enum Kind { Invalid, TooLong, QueueFull, ShuttingDown };
  Kind kind;
  SubmitError(Kind k, const std::string& message) : Error(message), kind(k) {}
};

// The step graphs a scheduler with these options builds, one per batch
// bucket (max_tokens 1, 2, 4, ... below max_seqs + prefill_chunk, then that),
// smallest first; `rayo kernels --precompile --parallel` compiles their kernels.
std::vector<graph::GraphConfig> step_graph_configs(int64_t max_seqs, int64_t prefill_chunk, bool batch_invariant);

class Scheduler {
 public:
  Scheduler(std::shared_ptr<const Model> model, const SchedulerOptions& options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request; throws SubmitError when it is invalid, cannot fit the
  // context, the queue is full or the scheduler is shutting down.
  std::shared_ptr<RequestStream> submit(Request request);

  // Refuses new requests from now on; what is queued or running continues.
  void drain();
  // Cancels everything in flight, then stops the thread.
  void stop();
  // Requests queued or running.
  int64_t in_flight() const;

  const SchedulerOptions& options() const { return options_; }
  const Model& model() const { return *model_; }
  const BatchStats& stats() const { return stats_; }
  // Bucket sizes (max_tokens of each step graph), ascending.
  std::vector<int64_t> buckets() const;
  // "cpu" or "cuda": where the steps run.
  std::string_view device() const { return engine_->backend().name(); }

 private:
  struct Sequence;
  void loop();
  void admit();
  void step();
  // Gives every decoding sequence the block its next position falls in,
  // preempting the youngest sequences when none is left.
  void grow_or_preempt();
  // Frees s's blocks; it is recomputed when admitted again.
  void preempt(Sequence& s);
  // Gives s's ring slot back (sliding-window layers' rings).
  void release_ring(Sequence& s);
  // Hands the token sampled for s to its stream (with logprobs from `logits`,
  // fetched only when the request asks for them) and decides what comes next.
  void deliver(Sequence& s, int32_t id, const std::function<std::span<const float>()>& logits);
  void finish(Sequence& s, FinishReason reason, const std::string& error = {});
  // Indexes the whole prompt blocks the sequence has computed since the last call.
  void cache_prompt_blocks(Sequence& s);
  bool emit(Sequence& s, bool last);
  graph::Executor& bucket_for(int64_t n_tokens);

  std::shared_ptr<const Model> model_;
  SchedulerOptions options_;
  std::unique_ptr<StepEngine> engine_;
  std::vector<graph::Executor*> buckets_;  // the engine's step graphs, ascending max_tokens
  std::unique_ptr<class BlockAllocator> allocator_;
  std::unique_ptr<class PrefixCache> prefix_;  // null when prefix caching is off
  int64_t max_blocks_per_seq_ = 0;
  std::vector<int64_t> free_rings_;  // ring slots of no running sequence (StepEngine::ring_start)
  BatchStats stats_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Sequence>> waiting_;  // guarded by mutex_
  bool draining_ = false, stopping_ = false;        // guarded by mutex_
  std::atomic<int64_t> in_flight_{0};

  std::vector<std::unique_ptr<Sequence>> running_;  // scheduler thread only
  std::thread thread_;
};

}  // namespace rayo::runtime
