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
// y = gelu_tanh(gate) * up, gelu_tanh(x) = x/2 · (1 + tanh(√(2/π) (x + 0.044715 x³))).
void geglu_row(const float* gate, const float* up, float* y, int64_t n);
// One of the two, by the node's activation.
void glu_row(graph::Activation act, const float* gate, const float* up, float* y, int64_t n);

// Rotary embedding of the n_head heads of one row at position pos.
// freq_factors (n_rot/2 values) divides each pair's frequency, or is null.
void rope_row(const float* x, float* y, int n_head, int head_dim, const graph::RopeParams& rope, int32_t pos,
              const float* freq_factors);

// The factor q·k is multiplied by in an Attention node (Node::scale, else 1/√head_dim).
float attention_scale(const graph::Node& n);
// The first position a query at `pos` sees through a window of `window`
// positions (0: no window).
int32_t first_visible(int window, int32_t pos);

// Causal attention of one query head (head_dim values) at position pos over
// positions first..pos of its sequence, kv head kv_head, scores q·k times
// `scale`. rows[j] is the cache row of position j. `scores` has room for
// pos + 1 floats. Writes head_dim values.
void attention_head(const KvCache& cache, int layer, int kv_head, int head_dim, float scale, const float* q,
                    int32_t first, int32_t pos, const int64_t* rows, float* scores, float* out);

}  // namespace rayo::cpu
