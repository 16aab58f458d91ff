#include "backends/cpu/kv_cache.h"

#include <cstring>

#include "backends/cpu/f16_rows.h"
#include "common/error.h"

namespace rayo::cpu {

void KvCache::init(const graph::KvCacheConfig& config) {
  RAYO_CHECK(config.n_layers > 0 && config.n_blocks > 0 && config.block_size > 0 && config.kv_width > 0,
             "empty KV cache");
  config_ = config;
  row_bytes_ = static_cast<size_t>(config.kv_width) * (config.type == graph::KvType::F16 ? 2 : 4);
  RAYO_CHECK(config.ring_blocks == 0 || config.n_ring_blocks >= config.ring_blocks, "KV ring pool smaller than a ring");
  RAYO_CHECK((config.cross_len > 0) == (config.n_cross_slots > 0), "cross-attention memory without slots");
  layers_.clear();
  layers_.resize(config.n_layers * (config.cross_len > 0 ? 2 : 1));
  for (int l = 0; l < static_cast<int>(layers_.size()); ++l) {
    layers_[l].k.resize(row_bytes_ * n_rows(l));
    layers_[l].v.resize(row_bytes_ * n_rows(l));
  }
}

void KvCache::store(int layer, int64_t row, const float* k, const float* v) {
  RAYO_CHECK(row >= 0 && row < n_rows(layer), "KV row ", row, " outside the cache of ", n_rows(layer));
  auto* kd = layers_[layer].k.data() + row * row_bytes_;
  auto* vd = layers_[layer].v.data() + row * row_bytes_;
  if (config_.type == graph::KvType::F16) {
    f32_to_f16_row(k, reinterpret_cast<uint16_t*>(kd), config_.kv_width);
    f32_to_f16_row(v, reinterpret_cast<uint16_t*>(vd), config_.kv_width);
  } else {
    std::memcpy(kd, k, row_bytes_);
    std::memcpy(vd, v, row_bytes_);
  }
}

void KvCache::copy_block(int64_t src, int64_t dst) {
  RAYO_CHECK(src >= 0 && src < config_.n_blocks && dst >= 0 && dst < config_.n_blocks, "KV block ", src, " or ", dst,
             " outside the cache");
  const size_t bytes = row_bytes_ * config_.block_size;
  for (int l = 0; l < config_.n_layers; ++l) {
    if (config_.in_ring(l)) continue;
    std::memcpy(layers_[l].k.data() + dst * bytes, layers_[l].k.data() + src * bytes, bytes);
    std::memcpy(layers_[l].v.data() + dst * bytes, layers_[l].v.data() + src * bytes, bytes);
  }
}

size_t KvCache::bytes() const {
  size_t rows = 0;
  for (int l = 0; l < static_cast<int>(layers_.size()); ++l) rows += static_cast<size_t>(n_rows(l));
  return 2 * row_bytes_ * rows;
}

}  // namespace rayo::cpu
