#pragma once
// Sizing the KV cache pool from the device's memory, as vLLM's
// gpu_memory_utilization does: the process may hold `fraction` of the GPU's
// total memory, and what its weights, activation arenas and the CUDA context
// leave of that goes to KV cache blocks.
#include <cstdint>

#include "graph/backend.h"

namespace rayo::runtime {

// Bytes one block of `block_size` positions takes over all layers (K and V)
// but those that keep rings instead (sliding-window layers, graph/backend.h).
uint64_t kv_block_bytes(const graph::KvCacheConfig& config);

// The blocks that fit once everything but the KV cache is allocated: `memory`
// is measured then, while a pool of `pool_bytes` is allocated (it is given
// back when the new pool replaces it). Fails with a one-line error when the
// fraction is out of (0, 1] or leaves less than `min_blocks` (one full
// context); never more than INT32_MAX blocks.
int64_t kv_blocks_for_fraction(const graph::DeviceMemory& memory, double fraction, uint64_t pool_bytes,
                               uint64_t block_bytes, int64_t min_blocks);

}  // namespace rayo::runtime
