#include "whisper/graph_runner.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>

#include "audio/mel_window.h"
#include "common/error.h"
#include "whisper/whisper_graphs.h"

namespace rayo::whisper {
namespace {

constexpr int64_t kBlockSize = 16;

// "auto" means the CPU here, even where a GPU is usable: Whisper's CUDA
// kernels are checked on the emulated GPU against the CPU backend but have not
// yet been measured on a GPU, so --device cuda asks for them explicitly.
runtime::BackendChoice whisper_device(runtime::BackendChoice choice) {
  if (choice.device == "auto") choice.device = "cpu";
  return choice;
}

}  // namespace

GraphWhisperRunner::GraphWhisperRunner(const WhisperFiles& files, const GraphRunnerOptions& options)
    : files_(files),
      choice_(runtime::resolve(whisper_device(options.backend))),
      weights_(files.model, options.weights, choice_.n_threads),
      max_sequences_(std::max(1, options.max_sequences)) {
  const WhisperSpec& s = files_.spec;
  const int64_t blocks_per_seq = (s.n_text_ctx + kBlockSize - 1) / kBlockSize;
  // Between two calls a sequence's old blocks and its forks' copies coexist: twice the sequences.
  const int n_slots = 2 * max_sequences_;
  runtime::StepGraphs graphs;
  graphs.kv.n_layers = static_cast<int>(s.n_text_layer);
  graphs.kv.kv_width = s.n_text_state;
  graphs.kv.block_size = kBlockSize;
  graphs.kv.n_blocks = n_slots * blocks_per_seq;
  graphs.kv.max_seq_len = s.n_text_ctx;
  // f32 on the CPU, as CTranslate2's float32 compute, whose transcripts are
  // the reference (also where --device cuda finds no GPU); the CUDA backend
  // keeps its caches in f16.
  graphs.kv.type = graph::KvType::F32;
  graphs.kv_type_for = [](const graph::Backend& b) {
    return b.name() == "cuda" ? graph::KvType::F16 : graph::KvType::F32;
  };
  graphs.kv.cross_len = s.n_audio_ctx;
  graphs.kv.n_cross_slots = 1;
  graphs.build = [this](const graph::GraphConfig& config) { return build(config); };
  graphs.n_vocab = s.n_vocab;
  engine_ = std::make_unique<runtime::StepEngine>(std::move(graphs), choice_);
  slots_.resize(n_slots);
  free_blocks_.resize(engine_->kv_config().n_blocks);
  std::iota(free_blocks_.rbegin(), free_blocks_.rend(), 0);

  encoder_config_.max_tokens = s.n_audio_ctx;
  encoder_config_.max_frames = 2 * s.n_audio_ctx;
  encoder_config_.max_outputs = 1;
  // Both graphs built (their weights prepared) now, not at the first window
  // and token; after each, the store's copies that the backend has copies of
  // let go (before the decoder's are made: a lower peak). Which bytes the
  // nodes read, and how, is seen on the graphs as built (no arena, not
  // prepared), so that both are seen before the backend has prepared both.
  const std::vector<graph::Graph> built = {build(encoder_config_), build(decoder_config(1))};
  engine_->graph(encoder_config_);
  release_store_copies(built);
  decoder_for(1);
  release_store_copies(built);
  encoder_tokens_.assign(s.n_audio_ctx, 0);
  encoder_seq_.assign(s.n_audio_ctx, 0);
  encoder_positions_.resize(s.n_audio_ctx);
  std::iota(encoder_positions_.begin(), encoder_positions_.end(), 0);
}

GraphWhisperRunner::~GraphWhisperRunner() = default;

// The store's copies (weights quantized at load, floats copied for alignment)
// of the matrices the backend now multiplies from copies of its own are not
// read again: their memory goes (synthetic large-v3, int8, on the CPU: 1.6 GB,
// the Q8_0 matrices beside their repacked copies). Other decoder graphs (more
// tokens a step) have the same nodes and weights: the backend's copies serve
// them. Kept: whatever a node reads other than as its matrix (the token
// embedding, which the logits also multiply by; norms, biases, positions).
// A matrix the backend has not prepared yet counts as read: its copy stays
// until a later call.
void GraphWhisperRunner::release_store_copies(std::span<const graph::Graph> graphs) {
  std::set<const void*> held, read;
  for (const graph::Graph& g : graphs) {
    for (const graph::Node& n : g.nodes()) {
      const std::vector<int> matrices = graph::matrix_weights(n);
      std::vector<int> uses = {n.weight, n.rope.freq_factors};
      uses.insert(uses.end(), std::begin(n.aux), std::end(n.aux));
      for (const int w : uses) {
        if (w < 0) continue;
        const void* data = g.weights()[w].data;
        const bool matrix = std::find(matrices.begin(), matrices.end(), w) != matrices.end();
        (matrix && engine_->backend().holds_matrix_copy(data) ? held : read).insert(data);
      }
    }
  }
  weights_.release_copies(held, read);
}

// The encoder's graph (the configuration with input frames) or a decoder step's.
graph::Graph GraphWhisperRunner::build(const graph::GraphConfig& config) const {
  if (config.max_frames > 0) return build_encoder_graph(files_.model, weights_, files_.spec, config);
  return build_decoder_graph(files_.model, weights_, files_.spec, config);
}

void GraphWhisperRunner::encode(std::span<const float> mel) {
  const WhisperSpec& s = files_.spec;
  const int64_t frames = 2 * int64_t{s.n_audio_ctx};
  if (static_cast<int64_t>(mel.size()) != int64_t{s.n_mels} * frames)
    fail("a Whisper window is ", s.n_mels, " x ", frames, " log-mel values, not ", mel.size());
  runtime::StepRows rows;
  rows.tokens = encoder_tokens_;
  rows.positions = encoder_positions_;
  rows.seq = encoder_seq_;
  rows.features = mel;
  rows.n_frames = frames;
  engine_->run(engine_->graph(encoder_config_), rows);
  // A new window: every sequence's cross-attention changed, so no kept keys
  // and values are valid any more.
  for (Slot& slot : slots_) release(slot);
  encoded_ = true;
}

std::span<const float> GraphWhisperRunner::encoder_output() {
  RAYO_CHECK(encoded_, "no window encoded yet");
  return engine_->graph(encoder_config_).logits();
}

int GraphWhisperRunner::free_slot() {
  for (size_t i = 0; i < slots_.size(); ++i)
    if (!slots_[i].used) return static_cast<int>(i);
  fail("no free decoder sequence slot");
}

int32_t GraphWhisperRunner::take_block() {
  RAYO_CHECK(!free_blocks_.empty(), "the decoder's KV cache is full");
  const int32_t b = free_blocks_.back();
  free_blocks_.pop_back();
  return b;
}

void GraphWhisperRunner::release(Slot& slot) {
  free_blocks_.insert(free_blocks_.end(), slot.blocks.begin(), slot.blocks.end());
  slot = Slot{};
}

graph::GraphConfig GraphWhisperRunner::decoder_config(int64_t n_tokens) const {
  int64_t bucket = 8;
  while (bucket < n_tokens) bucket *= 2;
  graph::GraphConfig config;
  config.max_tokens = bucket;
  config.max_outputs = max_sequences_ + 1;
  return config;
}

graph::Executor& GraphWhisperRunner::decoder_for(int64_t n_tokens) { return engine_->graph(decoder_config(n_tokens)); }

void GraphWhisperRunner::decode(std::span<const std::vector<int32_t>> sequences, std::vector<float>& logits,
                                int32_t extra_position, std::vector<float>* extra_logits) {
  const WhisperSpec& s = files_.spec;
  if (!encoded_) fail("decode() before any window was encoded");
  if (sequences.empty()) fail("decode() of no sequences");
  if (static_cast<int>(sequences.size()) > max_sequences_)
    fail(sequences.size(), " sequences in one decoder step; this runner was made for ", max_sequences_);
  for (const auto& seq : sequences) {
    if (seq.empty() || seq.size() > s.n_text_ctx)
      fail("a decoder sequence of ", seq.size(), " tokens (1 to ", s.n_text_ctx, ")");
    for (int32_t t : seq)
      if (t < 0 || t >= static_cast<int32_t>(s.n_vocab)) fail("token id ", t, " outside the vocabulary of ", s.n_vocab);
  }
  RAYO_CHECK(extra_position < 0 || (extra_logits && extra_position < static_cast<int32_t>(sequences[0].size())),
             "extra position ", extra_position, " outside the first sequence");

  // Match each sequence with the kept slot sharing its longest prefix (at
  // least its last token is computed again, for its logits).
  const size_t n = sequences.size();
  std::vector<int> source(n, -1);
  std::vector<int64_t> kept(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const auto& seq = sequences[i];
    for (size_t o = 0; o < slots_.size(); ++o) {
      const Slot& slot = slots_[o];
      if (!slot.used) continue;
      const size_t limit = std::min(slot.tokens.size(), seq.size() - 1);
      const int64_t common =
          std::mismatch(seq.begin(), seq.begin() + static_cast<std::ptrdiff_t>(limit), slot.tokens.begin()).first -
          seq.begin();
      if (common > kept[i]) kept[i] = common, source[i] = static_cast<int>(o);
    }
  }
  if (extra_position >= 0) kept[0] = std::min<int64_t>(kept[0], extra_position);

  // The first sequence matched to a slot takes it over; others get a copy of its blocks.
  const int64_t blocks_per_seq = (s.n_text_ctx + kBlockSize - 1) / kBlockSize;
  std::vector<int> slot_of(n, -1);
  std::vector<char> claimed(slots_.size(), 0);
  std::vector<std::pair<int32_t, int32_t>> copies;
  for (size_t i = 0; i < n; ++i)
    if (source[i] >= 0 && !claimed[source[i]]) claimed[source[i]] = 1, slot_of[i] = source[i];
  std::vector<char> kept_slot = claimed;  // slots some sequence goes on with
  for (size_t i = 0; i < n; ++i) {
    if (slot_of[i] >= 0) continue;
    // Not the source's owner: a new slot, with copies of the blocks holding the kept prefix.
    int fresh = -1;
    for (size_t o = 0; o < slots_.size() && fresh < 0; ++o)
      if (!slots_[o].used && !claimed[o]) fresh = static_cast<int>(o);
    RAYO_CHECK(fresh >= 0, "no free decoder sequence slot");
    claimed[fresh] = 1;
    kept_slot[fresh] = 1;
    slot_of[i] = fresh;
    Slot& slot = slots_[fresh];
    slot.used = true;
    if (source[i] >= 0) {
      const Slot& from = slots_[source[i]];
      for (int64_t b = 0; b < (kept[i] + kBlockSize - 1) / kBlockSize; ++b) {
        slot.blocks.push_back(take_block());
        copies.emplace_back(from.blocks[b], slot.blocks.back());
      }
    }
  }
  engine_->backend().copy_kv_blocks(copies);
  for (size_t o = 0; o < slots_.size(); ++o)
    if (slots_[o].used && !kept_slot[o]) release(slots_[o]);

  // The step: each sequence's tokens after its kept prefix, and its blocks as
  // row i of the step's block table.
  std::vector<int32_t> tokens, positions, seq_index, outputs;
  std::vector<int32_t> block_table(n * blocks_per_seq, -1);
  int64_t extra_row = -1;
  for (size_t i = 0; i < n; ++i) {
    Slot& slot = slots_[slot_of[i]];
    const auto& seq = sequences[i];
    while (static_cast<int64_t>(slot.blocks.size()) * kBlockSize < static_cast<int64_t>(seq.size()))
      slot.blocks.push_back(take_block());
    for (int64_t p = kept[i]; p < static_cast<int64_t>(seq.size()); ++p) {
      if (i == 0 && p == extra_position) extra_row = static_cast<int64_t>(tokens.size()), outputs.push_back(tokens.size());
      tokens.push_back(seq[p]);
      positions.push_back(static_cast<int32_t>(p));
      seq_index.push_back(static_cast<int32_t>(i));
    }
    if (!(i == 0 && static_cast<int64_t>(seq.size()) - 1 == extra_position)) outputs.push_back(tokens.size() - 1);
    slot.tokens = seq;
    std::copy(slot.blocks.begin(), slot.blocks.end(), block_table.begin() + static_cast<std::ptrdiff_t>(i * blocks_per_seq));
  }

  graph::Executor& ex = decoder_for(static_cast<int64_t>(tokens.size()));
  runtime::StepRows rows;
  rows.tokens = tokens;
  rows.positions = positions;
  rows.outputs = outputs;
  rows.seq = seq_index;
  rows.block_table = block_table;
  rows.max_blocks_per_seq = static_cast<int32_t>(blocks_per_seq);
  const std::vector<int32_t> cross_slots(n, 0);  // every sequence reads the one window
  rows.cross_slot = cross_slots;
  engine_->run(ex, rows);
  decoded_tokens_ += static_cast<int64_t>(tokens.size());

  // Output rows are ascending: the extra row (if any) comes right before the first sequence's last.
  const auto out = ex.logits();
  const size_t vocab = s.n_vocab;
  logits.resize(n * vocab);
  size_t row = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i == 0 && extra_row >= 0) {
      extra_logits->assign(out.begin() + static_cast<std::ptrdiff_t>(row * vocab),
                           out.begin() + static_cast<std::ptrdiff_t>((row + 1) * vocab));
      if (static_cast<int64_t>(sequences[0].size()) - 1 > extra_position) ++row;  // its own row follows
    }
    std::copy_n(out.begin() + static_cast<std::ptrdiff_t>(row * vocab), vocab, logits.begin() + i * vocab);
    ++row;
  }
}

}  // namespace rayo::whisper
