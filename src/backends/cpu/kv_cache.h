#pragma once
// The CPU KV cache: for each layer, a pool of n_blocks * block_size rows of
// rotated keys and of values (n_ring_blocks * block_size for a sliding-window
// layer that keeps a ring), each row n_head_kv * head_dim values in f16
// (default, as llama.cpp) or f32. Which rows belong to which sequence is the
// block tables' business (graph/backend.h); here a row is just an index.
// An encoder-decoder model's cross-attention memory (cross_len positions per
// slot) is kept apart, in f32, in the layout the dense attention kernel reads
// (dense_attention.h): per layer and slot, the keys transposed
// ([kv_width][dense_padded_len(cross_len)], zero-padded) and the values
// ([cross_len][kv_width]).
#include <cstdint>
#include <vector>

#include "common/aligned_buffer.h"
#include "graph/backend.h"

namespace rayo::cpu {

class KvCache {
 public:
  void init(const graph::KvCacheConfig& config);
  const graph::KvCacheConfig& config() const { return config_; }
  bool empty() const { return layers_.empty(); }

  int64_t n_rows(int layer) const { return config_.blocks_of(layer) * config_.block_size; }

  // Stores position pos of a slot's cross-attention keys and values (kv_width floats each).
  void store_cross(int layer, int64_t slot, int64_t pos, const float* k, const float* v);
  const float* cross_keys_transposed(int layer, int64_t slot) const;
  const float* cross_values(int layer, int64_t slot) const;

  // Copies block src of every main-pool layer to block dst (beam search forks).
  void copy_block(int64_t src, int64_t dst);

  // Stores the k and v rows (kv_width floats each) at a cache row.
  void store(int layer, int64_t row, const float* k, const float* v);

  // A cache row of a layer's keys/values: f16 or f32 per config().type.
  const void* key_row(int layer, int64_t row) const { return this->row(layers_[layer].k, row); }
  const void* value_row(int layer, int64_t row) const { return this->row(layers_[layer].v, row); }

  size_t bytes() const;

 private:
  struct Layer {
    AlignedBuffer k, v;
  };
  size_t cross_keys_floats() const;  // per layer and slot
  size_t cross_slot_floats() const;  // keys and values
  const void* row(const AlignedBuffer& b, int64_t r) const { return b.data() + r * row_bytes_; }
  graph::KvCacheConfig config_;
  size_t row_bytes_ = 0;
  std::vector<Layer> layers_;
  std::vector<AlignedBuffer> cross_;  // per layer: n_cross_slots x (keys transposed, values)
};

}  // namespace rayo::cpu
