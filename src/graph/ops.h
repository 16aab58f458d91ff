#pragma once
// The op set of rayo's compute graph. A transformer decode or prefill step is a
// short list of these; backends implement each one (and may implement fused
// ops that passes create from them).
#include <string_view>

namespace rayo::graph {

enum class Op {
  Embed,       // out[t] = row tokens[t] of the embedding weight (dequantized), times Node::scale
  RmsNorm,     // out = in / rms(in) * weight, over groups of `group` values (group = cols or head_dim)
  MatMul,      // out[t] = W · in[t]; W is [out_cols × in_cols] in its own quantized type
  AddBias,     // out[t] = in[t] + bias (bias is a weight vector)
  Add,         // out = a + b (residual)
  Glu,         // out = act(gate) * up, act = Node::act: SiLU (SwiGLU) or GELU-tanh (GeGLU)
  Rope,        // rotary position embedding of each head of in, at positions[t]
  KvStore,     // writes k[t], v[t] into the layer's KV cache at positions[t]; no output value
  Attention,   // causal attention of q over the layer's KV cache (GQA, softmax; Node::window, Node::scale)
  SelectRows,  // out = the rows of in whose logits the step asks for

  // Encoder-decoder models (Whisper).
  LayerNorm,      // out = (in - mean) / sqrt(var + eps) * weight + aux[0] (the bias), per row
  Gelu,           // out = in / 2 * (1 + erf(in / sqrt 2))
  Unfold,         // a kernel-3 convolution's input (padding 1), unfolded: out[t][c * 3 + k] =
                  // in(c, t * Node::stride + k - 1), 0 outside the input; a MatMul by the weight
                  // [out][in][3] (an out x in*3 matrix) and an AddBias make the convolution. in[0] =
                  // -1: the step's features (StepInputs::features, [channels][frames])
  AddPosition,    // out[t] = in[t] + row positions[t] of the weight (learned or sinusoidal positions)
  DenseAttention, // softmax(q k^T * scale) v over the rows of the step of the same sequence, unmasked:
                  // in = q, k, v (an encoder's self-attention; no cache)
  CrossKvStore,   // writes k[t], v[t] (in[0], in[1]) as row positions[t] of the layer's cross-attention
                  // memory in the slot of token t's sequence (StepInputs::cross_slot); no output value
  CrossAttention, // attention of q over every row (KvCacheConfig::cross_len) of the layer's
                  // cross-attention memory in its sequence's slot, unmasked

  // Fused ops, created by the passes of graph/fusion_passes.h for backends that
  // have kernels for them. Extra weights are in Node::aux (see there).
  RmsNormMatMul,  // out = W · rms_norm(in) (aux[0] = norm weight, eps)
  MatMulAdd,      // out = W · in[0] + in[1] (residual epilogue)
  GateUpGlu,   // out = act(Wgate · x) * (Wup · x), weight = gate, aux[1] = up; x = in or rms_norm(in) (aux[0])
  QkvRopeStore,   // out = rope(Wq · x + bq); rope(Wk · x + bk) and Wv · x + bv into the layer's KV cache;
                  // weight = q, aux[1] = k, aux[2] = v, aux[3..5] = biases or -1, aux[0] = norm or -1
};

std::string_view op_name(Op op);

}  // namespace rayo::graph
