#include "runtime/step_engine.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"

namespace rayo::runtime {

StepEngine::StepEngine(std::shared_ptr<const Model> model, const BackendChoice& choice, int64_t block_size,
                       int64_t n_blocks, int64_t max_seq_len, RingShape rings)
    : model_(std::move(model)), choice_(resolve(choice)) {
  backend_ = make_backend(choice_);
  const auto& spec = model_->spec();
  n_vocab_ = spec.n_vocab;
  build_ = [m = model_.get()](const graph::GraphConfig& config) {
    return m->architecture().build(m->file(), m->spec(), config);
  };
  kv_.n_layers = static_cast<int>(spec.n_layers);
  kv_.kv_width = spec.kv_dim();
  kv_.block_size = block_size;
  kv_.n_blocks = n_blocks;
  kv_.max_seq_len = max_seq_len;
  kv_.type = choice_.kv_type;
  // A ring holds every position a step reads or writes for its sequence: the
  // window before its first token, and its tokens. Worth it when smaller than
  // a whole context (Gemma 3: 512 or 1 024 positions of 32K-128K).
  if (spec.sliding_window > 0 && rings.sequences > 0) {
    const int64_t ring = (spec.sliding_window + std::max<int64_t>(rings.step_tokens, 1) - 1 + block_size - 1) / block_size;
    if (ring < (max_seq_len + block_size - 1) / block_size) {
      kv_.ring_blocks = ring;
      kv_.n_ring_blocks = ring * rings.sequences;
      for (uint32_t l = 0; l < spec.n_layers; ++l) kv_.ring_layers.push_back(spec.is_sliding(l));
    }
  }
  backend_->init_kv_cache(kv_);
}

StepEngine::StepEngine(StepGraphs graphs, const BackendChoice& choice)
    : choice_(resolve(choice)), kv_(std::move(graphs.kv)), build_(std::move(graphs.build)), n_vocab_(graphs.n_vocab) {
  backend_ = make_backend(choice_);
  if (graphs.kv_type_for) kv_.type = graphs.kv_type_for(*backend_);
  backend_->init_kv_cache(kv_);
}

StepEngine::~StepEngine() = default;

const Model& StepEngine::model() const {
  RAYO_CHECK(model_ != nullptr, "this step engine runs no GGUF model");
  return *model_;
}

void StepEngine::resize_kv_cache(int64_t n_blocks) {
  kv_.n_blocks = n_blocks;
  backend_->init_kv_cache(kv_);
}

graph::Executor& StepEngine::graph(const graph::GraphConfig& config) {
  for (auto& e : executors_) {
    const graph::GraphConfig& c = e->graph().config();
    if (c.max_tokens == config.max_tokens && c.max_outputs == config.max_outputs &&
        c.batch_invariant == config.batch_invariant && c.max_frames == config.max_frames)
      return *e;
  }
  graph::Graph g = build_(config);
  executors_.push_back(std::make_unique<graph::Executor>(*backend_, std::move(g)));
  if (choice_.verbose) std::fprintf(stderr, "%s", executors_.back()->graph().describe().c_str());
  return *executors_.back();
}

std::vector<int32_t> StepEngine::run(graph::Executor& ex, const StepRows& rows, std::span<Sampler* const> samplers) {
  RAYO_CHECK(samplers.empty() || samplers.size() == rows.outputs.size(), "one sampler per output row");
  // Rows the backend can sample get their sampler's request (its u drawn
  // now, as Sampler::sample would); the others are left to the host.
  std::vector<graph::SampleRequest> requests(samplers.size());
  std::vector<std::vector<graph::TokenCount>> windows(samplers.size());
  std::vector<char> on_backend(samplers.size(), 0);
  bool any = false;
  for (size_t i = 0; i < samplers.size(); ++i) {
    const SamplingParams& p = samplers[i]->params();
    if (!backend_->samples(p.temperature, p.top_k, p.top_p, p.min_p)) {
      requests[i] = graph::SampleRequest{1.0f, 0};
      continue;
    }
    requests[i] = samplers[i]->backend_request(windows[i]);
    on_backend[i] = 1;
    any = true;
  }
  graph::StepInputs in{rows.tokens, rows.positions, rows.outputs, rows.seq, rows.block_table, rows.max_blocks_per_seq};
  if (any) in.sample = requests;
  in.ring_start = rows.ring_start;
  in.features = rows.features;
  in.n_frames = rows.n_frames;
  in.cross_slot = rows.cross_slot;
  RAYO_CHECK(!has_rings() || !rows.ring_start.empty(), "a step without the rings of the sliding-window layers");
  ex.run(in);

  std::vector<int32_t> ids(samplers.size(), -1);
  if (samplers.empty()) return ids;
  // Each output row's token: the backend's, or drawn here from the logits
  // (brought back only when some row needs them).
  const auto sampled = ex.sampled();
  const size_t n_vocab = static_cast<size_t>(n_vocab_);
  for (size_t i = 0; i < samplers.size(); ++i) {
    if (on_backend[i] && !sampled.empty() && sampled[i] >= 0) {
      ids[i] = sampled[i];
      continue;
    }
    const auto logits = ex.logits().subspan(i * n_vocab, n_vocab);
    ids[i] = on_backend[i] ? samplers[i]->sample_request(logits, requests[i]) : samplers[i]->sample(logits);
  }
  return ids;
}

}  // namespace rayo::runtime
