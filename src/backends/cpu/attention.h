#pragma once
// Causal attention over the KV cache for a tile of queries that share one KV
// head: the query heads of a GQA group, for one or several tokens of one
// sequence. Prompt processing spends most of its non-matmul time here.
//
// The per-query reference (attention_head in ops.h) reads and converts every
// f16 key and value row once per query head and position. The tile instead
// walks the sequence in chunks of 16 positions and converts each chunk's keys
// (then values) to f32 once for all its queries (group x tokens of them), so
// the inner loops are plain FMAs over L1-resident data. Three passes: scores of
// every query, the softmax of each query's scores, the weighted sum of values.
// The softmax is the reference's (exact exp, sum in double, normalised before
// the sum of values) rather than an online one: the small models of the parity
// tests amplify any change of rounding, and this keeps the two paths' logits
// the same to float rounding of the dot products.
#include <cstddef>
#include <cstdint>

#include "backends/cpu/kv_cache.h"

namespace rayo::cpu {

struct AttentionTile {
  int layer = 0, kv_head = 0, head_dim = 0;
  const int64_t* rows = nullptr;    // cache row of positions 0..max(pos) of the sequence
  int n = 0;                        // queries in the tile
  const float* const* q = nullptr;  // query i: head_dim floats (not yet scaled)
  const int32_t* pos = nullptr;     // query i attends to positions first[i]..pos[i]
  float* const* out = nullptr;      // output i: head_dim floats
  const int32_t* first = nullptr;   // null: every query starts at position 0
  float scale = 0.0f;               // scores are q·k times this (0: 1/√head_dim)
};

// True when attention_tile runs this head size on the active instruction set
// (AVX2 and head_dim a multiple of 8, at most 256); otherwise use attention_head.
bool attention_tile_supported(int head_dim);

// Bytes of scratch attention_tile needs for up to n queries of head_dim at
// positions up to max_pos (whatever their first positions).
size_t attention_tile_scratch_bytes(int head_dim, int n, int32_t max_pos);

// Writes the attention output of every query of the tile. scratch:
// attention_tile_scratch_bytes(head_dim, tile.n, max(tile.pos)) bytes, 32-byte aligned.
void attention_tile(const KvCache& cache, const AttentionTile& tile, void* scratch);

}  // namespace rayo::cpu
