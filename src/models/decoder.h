#pragma once
// The decoder-only transformer shared by the Llama family of architectures:
// pre-norm blocks of grouped-query self-attention with rotary positions and a
// SwiGLU feed-forward network. Each architecture file (llama.cpp, qwen2.cpp,
// qwen3.cpp) states how it differs through DecoderVariant.
#include "gguf/file.h"
#include "graph/graph.h"
#include "models/model_spec.h"

namespace rayo::models {

struct DecoderVariant {
  graph::RopeType rope = graph::RopeType::Normal;
  bool qkv_bias = false;  // qwen2: biases on the q, k and v projections
  bool qk_norm = false;   // qwen3: RMSNorm of each q and k head before rope
};

// Builds the step graph: tokens -> logits of the requested rows.
graph::Graph build_decoder_graph(const gguf::File& file, const ModelSpec& spec, const DecoderVariant& variant,
                                 const graph::GraphConfig& config);

}  // namespace rayo::models
