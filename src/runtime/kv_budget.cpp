#include "runtime/kv_budget.h"

#include <algorithm>
#include <cstdint>

#include "common/error.h"
#include "common/strings.h"

namespace rayo::runtime {

uint64_t kv_block_bytes(const graph::KvCacheConfig& config) {
  const uint64_t element = config.type == graph::KvType::F16 ? 2 : 4;
  uint64_t layers = 0;  // the layers whose blocks come from the pool (not the rings')
  for (int l = 0; l < config.n_layers; ++l) layers += !config.in_ring(l);
  return 2 * layers * static_cast<uint64_t>(config.block_size) * static_cast<uint64_t>(config.kv_width) * element;
}

int64_t kv_blocks_for_fraction(const graph::DeviceMemory& memory, double fraction, uint64_t pool_bytes,
                               uint64_t block_bytes, int64_t min_blocks) {
  if (!(fraction > 0 && fraction <= 1)) fail("--kv-fraction must be in (0, 1], got ", fraction);
  RAYO_CHECK(block_bytes > 0 && memory.free_bytes <= memory.total_bytes, "bad KV cache budget inputs");
  // Everything allocated now on the device (by this process or another), but
  // the provisional pool, counts against the budget.
  const uint64_t used = memory.total_bytes - memory.free_bytes - std::min(pool_bytes, memory.total_bytes - memory.free_bytes);
  const double budget = fraction * static_cast<double>(memory.total_bytes) - static_cast<double>(used);
  const double blocks = budget > 0 ? budget / static_cast<double>(block_bytes) : 0;
  if (blocks < static_cast<double>(min_blocks))
    fail("--kv-fraction ", fraction, " of the GPU's ", format_bytes(memory.total_bytes), " with ", format_bytes(used),
         " in use leaves ", format_bytes(budget > 0 ? static_cast<uint64_t>(budget) : 0),
         " for the KV cache, less than one context needs (", format_bytes(block_bytes * min_blocks),
         "): raise --kv-fraction or lower -c");
  return static_cast<int64_t>(std::min<double>(blocks, INT32_MAX));
}

}  // namespace rayo::runtime
