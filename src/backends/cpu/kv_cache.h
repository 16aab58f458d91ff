#pragma once
// The CPU KV cache of one sequence: for each layer, the rotated keys and the
// values of every position so far, row-major [position][n_head_kv * head_dim],
// in f16 (default, as llama.cpp) or f32.
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

  // Stores the k and v rows (kv_width floats each) of one position.
  void store(int layer, int64_t pos, const float* k, const float* v);

  // Row `pos` of a layer's keys/values: f16 or f32 per config().type.
  const void* key_row(int layer, int64_t pos) const { return row(layers_[layer].k, pos); }
  const void* value_row(int layer, int64_t pos) const { return row(layers_[layer].v, pos); }

  size_t bytes() const;

 private:
  struct Layer {
    AlignedBuffer k, v;
  };
  const void* row(const AlignedBuffer& b, int64_t pos) const { return b.data() + pos * row_bytes_; }
  graph::KvCacheConfig config_;
  size_t row_bytes_ = 0;
  std::vector<Layer> layers_;
};

}  // namespace rayo::cpu
