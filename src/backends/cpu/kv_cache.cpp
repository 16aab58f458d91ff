#include "backends/cpu/kv_cache.h"

#include <cstring>

#include "backends/cpu/dense_attention.h"
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
  layers_.resize(config.n_layers);
  cross_.clear();
  if (config.cross_len > 0) {
    cross_.resize(config.n_layers);
    // Zero-filled: the keys' padding stays zero.
    for (auto& c : cross_) c.resize(sizeof(float) * cross_slot_floats() * config.n_cross_slots);
  }
  for (int l = 0; l < config.n_layers; ++l) {
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

size_t KvCache::cross_keys_floats() const {
  return static_cast<size_t>(config_.kv_width) * dense_padded_len(config_.cross_len);
}
size_t KvCache::cross_slot_floats() const {
  return cross_keys_floats() + static_cast<size_t>(config_.cross_len) * config_.kv_width;
}

void KvCache::store_cross(int layer, int64_t slot, int64_t pos, const float* k, const float* v) {
  RAYO_CHECK(layer >= 0 && layer < static_cast<int>(cross_.size()) && slot >= 0 && slot < config_.n_cross_slots &&
                 pos >= 0 && pos < config_.cross_len,
             "cross-attention position ", pos, " of slot ", slot, " outside the memory");
  float* base = cross_[layer].as<float>() + slot * cross_slot_floats();
  const int64_t padded = dense_padded_len(config_.cross_len);
  for (int64_t c = 0; c < config_.kv_width; ++c) base[c * padded + pos] = k[c];
  std::memcpy(base + cross_keys_floats() + pos * config_.kv_width, v, sizeof(float) * config_.kv_width);
}

const float* KvCache::cross_keys_transposed(int layer, int64_t slot) const {
  return reinterpret_cast<const float*>(cross_[layer].data()) + slot * cross_slot_floats();
}

const float* KvCache::cross_values(int layer, int64_t slot) const {
  return cross_keys_transposed(layer, slot) + cross_keys_floats();
}

size_t KvCache::bytes() const {
  size_t rows = 0;
  for (int l = 0; l < static_cast<int>(layers_.size()); ++l) rows += static_cast<size_t>(n_rows(l));
  size_t cross = 0;
  for (const auto& c : cross_) cross += c.size();
  return 2 * row_bytes_ * rows + cross;
}

}  // namespace rayo::cpu
