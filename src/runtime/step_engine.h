#pragma once
// The step engine: the one place where tokens meet a backend. It owns the
// backend (made from one BackendChoice), its paged KV cache and the step
// graphs (one executor per GraphConfig, built on first use), and runs a step:
// rows of tokens of one or more sequences over the block table, some rows
// asking for an output -- their logits, or a token drawn by that row's
// Sampler. The draw happens on the device when the backend can (the step then
// brings back one id per row instead of the logits), else on the host from the
// logits; the token and each sampler's random stream are the same either way.
//
// Its users: Session (run, chat, perplexity: one sequence that owns the whole
// cache), Scheduler (serve: many sequences over a shared block pool), the
// batched-decode benchmark (bench -B) and GraphWhisperRunner (Whisper's
// encoder and decoder steps, from StepGraphs).
//
// An encoder-decoder model (Whisper) fits the same mould: the encoder pass is
// a step of its own graph, run once per input, whose outputs -- each
// cross-attention layer's keys and values -- the backend keeps beside the KV
// cache, one slot per sequence; the decoder's step graph reads the slot of
// each row's sequence (StepRows::seq names it), so a decoder step is a run()
// like any other and the sampling here serves both kinds of model.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "graph/backend.h"
#include "graph/executor.h"
#include "runtime/backend_choice.h"
#include "runtime/model.h"
#include "runtime/sampler.h"

namespace rayo::runtime {

// One step's rows (graph::StepInputs without the sample requests, which the
// engine makes from the samplers).
struct StepRows {
  std::span<const int32_t> tokens;       // one id per row
  std::span<const int32_t> positions;    // each row's position in its sequence
  std::span<const int32_t> seq;          // each row's sequence: its row of the block table
  std::span<const int32_t> outputs;      // rows that produce an output, ascending
  std::span<const int32_t> block_table;  // n_seqs x max_blocks_per_seq block ids
  int32_t max_blocks_per_seq = 0;
  std::span<const int32_t> ring_start;   // n_seqs first blocks of their rings (StepEngine::ring_start)
  // Encoder-decoder models (graph::StepInputs): an encoder step's input
  // features and frames; each sequence's cross-attention slot.
  std::span<const float> features;
  int64_t n_frames = 0;
  std::span<const int32_t> cross_slot;
};

// A model's step graphs as the engine builds them, and the KV cache they use:
// what a GGUF Model gives (the engine's first constructor makes it), or any
// other model's (a Whisper model's encoder and decoder graphs).
struct StepGraphs {
  graph::KvCacheConfig kv;  // block counts included
  std::function<graph::Graph(const graph::GraphConfig&)> build;
  int64_t n_vocab = 0;      // logits per output row
  // The KV cache's element type on the backend made (kv.type where null): a
  // model may keep f32 on the CPU and f16 where the backend keeps only that,
  // whichever a choice of "cuda" turns out to be (the CPU without a GPU).
  std::function<graph::KvType(const graph::Backend&)> kv_type_for;
};

// The rings of a model's sliding-window layers (graph/backend.h): one per
// sequence that may be in a step at once, each holding the window and the most
// positions a sequence writes in one step. No sequences: no rings (every layer
// keeps every position).
struct RingShape {
  int64_t sequences = 0;
  int64_t step_tokens = 0;
};

class StepEngine {
 public:
  // A backend for `choice` with a KV cache of n_blocks blocks of block_size
  // positions, for sequences of up to max_seq_len positions.
  // With `rings`, the model's sliding-window layers keep only a ring of
  // blocks per sequence (when that is smaller than a whole context).
  StepEngine(std::shared_ptr<const Model> model, const BackendChoice& choice, int64_t block_size, int64_t n_blocks,
             int64_t max_seq_len, RingShape rings = {});
  // Any model's `graphs`, on a backend for `choice`.
  StepEngine(StepGraphs graphs, const BackendChoice& choice);
  ~StepEngine();
  StepEngine(const StepEngine&) = delete;
  StepEngine& operator=(const StepEngine&) = delete;

  // The GGUF model (an engine made from StepGraphs has none).
  const Model& model() const;
  // The choice with its defaults resolved (n_threads: the threads the CPU uses).
  const BackendChoice& choice() const { return choice_; }
  graph::Backend& backend() { return *backend_; }
  const graph::Backend& backend() const { return *backend_; }
  const graph::KvCacheConfig& kv_config() const { return kv_; }
  // Whether sliding-window layers keep rings; ring `slot` (0 .. rings.sequences
  // - 1) starts at ring_start(slot), for StepRows::ring_start.
  bool has_rings() const { return kv_.ring_blocks > 0; }
  int32_t ring_start(int64_t slot) const { return static_cast<int32_t>(slot * kv_.ring_blocks); }
  // Positions a ring holds: a sequence may rewind to n only while n - window +
  // 1 is not older than the last ring_positions() positions it wrote.
  int64_t ring_positions() const { return kv_.ring_blocks * kv_.block_size; }
  // Re-allocates the KV cache with n_blocks blocks (its contents are lost).
  void resize_kv_cache(int64_t n_blocks);

  // The step graph for `config` (its sizes: tokens, outputs, frames, and
  // batch invariance), built (and with --verbose described on stderr) at
  // first use; preparing it repacks or uploads the weights.
  graph::Executor& graph(const graph::GraphConfig& config);

  // Runs one step on `ex`. `samplers`: empty (the step's result is the
  // outputs' logits, ex.logits()), or one per output row, whose token is
  // returned in that row's place. The samplers only draw: the caller
  // accepts the tokens it keeps.
  std::vector<int32_t> run(graph::Executor& ex, const StepRows& rows, std::span<Sampler* const> samplers = {});

 private:
  std::shared_ptr<const Model> model_;  // null for an engine made from StepGraphs
  BackendChoice choice_;
  std::unique_ptr<graph::Backend> backend_;
  graph::KvCacheConfig kv_;
  std::function<graph::Graph(const graph::GraphConfig&)> build_;
  int64_t n_vocab_ = 0;
  std::vector<std::unique_ptr<graph::Executor>> executors_;
};

}  // namespace rayo::runtime
