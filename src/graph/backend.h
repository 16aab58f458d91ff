#pragma once
// The interface between the graph executor and a compute backend (cpu, cuda).
// A backend owns the prepared weights, the activation arena of each graph it
// runs, and the KV cache; the executor tells it which node to run.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/passes.h"

namespace rayo::graph {

// A token of a sequence's penalty window and its count there.
struct TokenCount {
  int32_t token = 0;
  int32_t count = 0;
};

// A request to sample an output row on the backend: the parameters of
// runtime::Sampler's chain, its penalty window (ascending, distinct tokens)
// and the uniform number u of its draw (unused when greedy). A backend that
// samples the row itself gives the token the runtime's sampler would have
// drawn from the same logits (runtime::sample_with_uniform).
struct SampleRequest {
  float temperature = 0.0f;  // <= 0: greedy
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repeat_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  std::span<const TokenCount> penalties;
  float u = 0.0f;
};

// What changes from one step to the next: the tokens and where they go.
//
// The KV cache is paged: a pool of blocks of `block_size` positions. A step may
// hold tokens of several sequences (continuous batching); token t belongs to
// sequence seq[t], and position p of sequence s lives in cache block
// block_table[s * max_blocks_per_seq + p / block_size], row p % block_size.
// Attention of a token at position p reads positions 0..p of its own sequence
// (p - window + 1 .. p on a sliding-window layer).
//
// Sliding-window layers may keep only a ring of blocks per sequence, in a pool
// of their own (KvCacheConfig::ring_blocks): sequence s's ring is blocks
// ring_start[s] .. ring_start[s] + ring_blocks - 1 of that pool, and position p
// lives in block ring_start[s] + (p / block_size) % ring_blocks, row
// p % block_size. The ring must hold every position one step reads or writes
// for a sequence (window + its tokens in the step - 1 of them); positions
// before that are overwritten.
struct StepInputs {
  std::span<const int32_t> tokens;       // n_tokens ids
  std::span<const int32_t> positions;    // n_tokens positions in their sequences
  std::span<const int32_t> output_rows;  // which token rows get logits (ascending)
  std::span<const int32_t> seq;          // n_tokens sequence indices into the block table
  std::span<const int32_t> block_table;  // n_seqs x max_blocks_per_seq block ids
  int32_t max_blocks_per_seq = 0;
  // One per output row to sample on the backend (see Backend::sampled), or
  // empty: the step's result is the logits.
  std::span<const SampleRequest> sample;
  std::span<const int32_t> ring_start;  // n_seqs first blocks of the rings (when ring_blocks > 0)

  // Encoder-decoder models. An encoder step's input: n_frames frames of
  // features, feature-major ([n_features][n_frames], Whisper's log-mel); its
  // rows (tokens, positions) are the encoder's positions. The slot of each
  // sequence's cross-attention memory (KvCacheConfig::cross_len); empty: slot
  // s for sequence s.
  std::span<const float> features;
  int64_t n_frames = 0;
  std::span<const int32_t> cross_slot;
};

enum class KvType { F16, F32 };

struct KvCacheConfig {
  int n_layers = 0;
  int64_t kv_width = 0;        // n_head_kv * head_dim
  int64_t block_size = 16;     // positions per block
  int64_t n_blocks = 0;        // blocks in the pool
  int64_t max_seq_len = 0;     // longest sequence (sizes attention scratch)
  KvType type = KvType::F16;
  // Sliding-window layers that keep only a ring of ring_blocks blocks per
  // sequence (StepInputs above), in a pool of n_ring_blocks blocks; the other
  // layers' pool is n_blocks. ring_blocks 0: every layer in the one pool.
  std::vector<bool> ring_layers;  // per layer, or empty
  int64_t ring_blocks = 0;
  int64_t n_ring_blocks = 0;
  // Encoder-decoder models: each layer's cross-attention keys and values,
  // written by an encoder step (CrossKvStore) and read by the decoder's
  // (CrossAttention): n_cross_slots slots of cross_len rows of kv_width. 0:
  // none.
  int64_t cross_len = 0;
  int64_t n_cross_slots = 0;

  bool in_ring(int layer) const {
    return ring_blocks > 0 && layer >= 0 && static_cast<size_t>(layer) < ring_layers.size() && ring_layers[layer];
  }
  // Cache blocks of the pool holding `layer`.
  int64_t blocks_of(int layer) const { return in_ring(layer) ? n_ring_blocks : n_blocks; }
};

// The memory a backend allocates from, when it has its own (a GPU's).
struct DeviceMemory {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // Passes this backend wants before it runs a graph (fusions it has kernels for).
  virtual std::vector<std::unique_ptr<Pass>> passes() const { return {}; }

  // Allocates the KV cache, empty. Called before the first prepare(); may be
  // called again, before the first step, to replace the pool by one of
  // another n_blocks (the scheduler sizes it from the memory left once its
  // graphs are prepared). Nothing else of the config may change.
  virtual void init_kv_cache(const KvCacheConfig& config) = 0;
  // Prepares a planned graph (its weights, its arena). Called once per graph.
  virtual void prepare(const Graph& graph) = 0;
  // Whether the matrix at these weight bytes is multiplied, in every graph
  // prepared from now on too, from a copy this backend made when a graph
  // using it was prepared: then the bytes are not read again as a matrix, and
  // their owner may let them go if nothing else reads them.
  virtual bool holds_matrix_copy(const void* weight_data) const { return false; }

  // One step: begin, run every node in order, end.
  virtual void begin_step(const Graph& graph, const StepInputs& inputs) = 0;
  virtual void run(const Graph& graph, const Node& node) = 0;
  virtual void end_step(const Graph& graph) = 0;

  // Copies whole blocks of every layer's KV cache (main pool), src to dst:
  // a sequence forked from another (beam search) gets its own copy of the
  // block it goes on writing.
  virtual void copy_kv_blocks(std::span<const std::pair<int32_t, int32_t>> src_dst);

  // The logits of the last step: output_rows.size() rows of n_vocab floats.
  virtual std::span<const float> output(const Graph& graph) = 0;

  // Whether this backend samples rows with these parameters itself (then a
  // step with sample requests need not bring the logits back).
  virtual bool samples(float temperature, int top_k, float top_p, float min_p) const { return false; }
  // After a step with sample requests: the token of each output row, or -1
  // where the caller must sample from output(). Empty when the backend samples
  // nothing.
  virtual std::span<const int32_t> sampled(const Graph& graph) { return {}; }

  // Bytes per second this backend's memory streams at, measured now (a second
  // or less): the roofline `rayo bench` compares token generation with. 0
  // when the backend cannot measure it.
  virtual double measure_memory_bandwidth() { return 0; }

  // Free and total bytes of the device memory this backend allocates from
  // now; nullopt when it has none of its own (the CPU shares the host's).
  virtual std::optional<DeviceMemory> device_memory() const { return std::nullopt; }
};

}  // namespace rayo::graph
