#pragma once
// The CPU implementations of the graph's non-matmul ops, on one row (token) at
// a time; the backend spreads rows (or rows x heads) over its threads.
#include <cstdint>

#include "backends/cpu/kv_cache.h"
#include "graph/graph.h"

namespace rayo::cpu {

// y = x / sqrt(mean(x^2) + eps) * w over each group of `group` values
// (sum of squares in double, as ggml does).
void rms_norm_row(const float* x, const float* w, float* y, int64_t cols, int group, float eps);

void add_row(const float* a, const float* b, float* y, int64_t n);
// y = silu(gate) * up, silu(x) = x / (1 + exp(-x)).
void swiglu_row(const float* gate, const float* up, float* y, int64_t n);

// Rotary embedding of the n_head heads of one row at position pos.
// freq_factors (n_rot/2 values) divides each pair's frequency, or is null.
void rope_row(const float* x, float* y, int n_head, int head_dim, const graph::RopeParams& rope, int32_t pos,
              const float* freq_factors);

// Causal attention of one query head (head_dim values) at position pos over
// positions 0..pos of its sequence, kv head kv_head. rows[j] is the cache row
// of position j. `scores` has room for pos + 1 floats. Writes head_dim values.
void attention_head(const KvCache& cache, int layer, int kv_head, int head_dim, const float* q, int32_t pos,
                    const int64_t* rows, float* scores, float* out);

}  // namespace rayo::cpu
