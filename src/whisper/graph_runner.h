#pragma once
// A WhisperRunner on rayo's compute graph and step engine (whisper_graphs.h,
// runtime/step_engine.h): the encoder graph writes each decoder layer's cross-attention keys and
// values into the backend's cross-attention memory (one slot: the current
// window), and decoder steps run over the paged KV cache, one block list per
// sequence.
//
// Sequences are matched to what the previous call computed: a sequence that
// extends a kept one (greedy: the same sequence plus a token) takes over its
// cache blocks and computes only the new tokens; a second sequence extending
// the same one (beam search forking) gets a copy of its blocks. All the
// sequences of a call run as one step.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "graph/backend.h"
#include "graph/executor.h"
#include "runtime/backend_choice.h"
#include "runtime/step_engine.h"
#include "whisper/whisper_runner.h"
#include "whisper/weight_store.h"
#include "whisper/whisper_spec.h"

namespace rayo::whisper {

struct GraphRunnerOptions {
  runtime::BackendChoice backend;  // "auto" is the CPU (graph_runner.cpp); "cuda" runs the steps on the GPU
  int max_sequences = 8;           // sequences of one decode() call (beam size, best_of)
  WeightFormat weights = WeightFormat::AsStored;  // or int8: weight matrices quantized at load
};

class GraphWhisperRunner final : public WhisperRunner {
 public:
  // `files` must outlive the runner (its weights are views into the model file).
  GraphWhisperRunner(const WhisperFiles& files, const GraphRunnerOptions& options);
  ~GraphWhisperRunner() override;

  const WhisperSpec& spec() const override { return files_.spec; }
  void encode(std::span<const float> mel) override;
  void decode(std::span<const std::vector<int32_t>> sequences, std::vector<float>& logits,
              int32_t extra_position = -1, std::vector<float>* extra_logits = nullptr) override;

  // The last encode()'s output: n_audio_ctx rows of n_audio_state.
  std::span<const float> encoder_output();
  // Decoder token rows computed so far (a measure of what the reuse saves).
  int64_t decoded_tokens() const { return decoded_tokens_; }
  int n_threads() const { return choice_.n_threads; }
  // The backend the steps run on (its counters: transfers and launches per window).
  graph::Backend& backend() { return engine_->backend(); }
  // Bytes of weights this runner keeps copies of beside the backend's (WeightStore::copy_bytes).
  size_t weight_copy_bytes() const { return weights_.copy_bytes(); }

 private:
  struct Slot {
    bool used = false;
    std::vector<int32_t> tokens;  // whose keys and values the blocks hold
    std::vector<int32_t> blocks;
  };
  // A decoder step of up to n_tokens tokens: its configuration (a bucket of 8, 16, 32 ...), its graph.
  graph::GraphConfig decoder_config(int64_t n_tokens) const;
  graph::Executor& decoder_for(int64_t n_tokens);
  void release_store_copies(std::span<const graph::Graph> graphs);
  graph::Graph build(const graph::GraphConfig& config) const;
  int free_slot();
  int32_t take_block();
  void release(Slot& slot);

  const WhisperFiles& files_;
  runtime::BackendChoice choice_;
  WeightStore weights_;
  int max_sequences_;
  std::unique_ptr<runtime::StepEngine> engine_;  // after weights_, which its graphs read
  graph::GraphConfig encoder_config_;
  std::vector<Slot> slots_;
  std::vector<int32_t> free_blocks_;
  int64_t decoded_tokens_ = 0;
  bool encoded_ = false;
  // The encoder step's rows: positions 0 .. n_audio_ctx - 1 of sequence 0.
  std::vector<int32_t> encoder_tokens_, encoder_positions_, encoder_seq_;
};

}  // namespace rayo::whisper
