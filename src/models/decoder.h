#pragma once
// The decoder-only transformer shared by the Llama family of architectures:
// pre-norm blocks of grouped-query self-attention with rotary positions and a
// SwiGLU feed-forward network. How an architecture differs (rope layout, q/k/v
// biases, q/k norms) comes from its ModelSpec (models/model_spec.cpp).
#include "gguf/file.h"
#include "graph/graph.h"
#include "models/model_spec.h"

namespace rayo::models {

// Builds the step graph: tokens -> logits of the requested rows.
graph::Graph build_decoder_graph(const gguf::File& file, const ModelSpec& spec, const graph::GraphConfig& config);

}  // namespace rayo::models
