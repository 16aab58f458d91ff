#pragma once
// The op set of rayo's compute graph. A transformer decode or prefill step is a
// short list of these; backends implement each one (and may implement fused
// ops that passes create from them).
#include <string_view>

namespace rayo::graph {

enum class Op {
  Embed,       // out[t] = row tokens[t] of the embedding weight (dequantized)
  RmsNorm,     // out = in / rms(in) * weight, over groups of `group` values (group = cols or head_dim)
  MatMul,      // out[t] = W · in[t]; W is [out_cols × in_cols] in its own quantized type
  AddBias,     // out[t] = in[t] + bias (bias is a weight vector)
  Add,         // out = a + b (residual)
  SwiGLU,      // out = silu(gate) * up
  Rope,        // rotary position embedding of each head of in, at positions[t]
  KvStore,     // writes k[t], v[t] into the layer's KV cache at positions[t]; no output value
  Attention,   // causal attention of q over the layer's KV cache (GQA, softmax)
  SelectRows,  // out = the rows of in whose logits the step asks for
};

std::string_view op_name(Op op);

}  // namespace rayo::graph
