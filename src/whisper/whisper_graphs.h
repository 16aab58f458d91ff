#pragma once
// Whisper in rayo's compute graph: the encoder step (one or more 30-second
// windows of log-mel in, each decoder layer's cross-attention keys and values
// out, into the backend's cross-attention memory) and the decoder step (token
// rows of one or more sequences in, logits out), built from a CTranslate2
// model's variables as views into its mapped file.
//
// Encoder: conv1d(k3) + GELU, conv1d(k3, stride 2) + GELU (each convolution an
// Unfold of its input, a MatMul and an AddBias), + sinusoidal
// positions, pre-LayerNorm blocks (self-attention over all positions, GELU
// MLP), a final LayerNorm; then, per decoder layer, k = W_k e and v = W_v e +
// b_v into the cross-attention memory. Its output value is the encoder's output
// (n_audio_ctx rows of n_audio_state), which tests compare with faster-whisper's.
//
// Decoder: token embedding + learned positions; per layer masked
// self-attention over the paged KV cache (KvStore, Attention), cross-attention
// over the memory, GELU MLP, each pre-LayerNorm with a residual; a final
// LayerNorm and the logits through the (tied) token embedding.
#include "graph/graph.h"
#include "whisper/ct2_model.h"
#include "whisper/weight_store.h"
#include "whisper/whisper_spec.h"

namespace rayo::whisper {

inline constexpr float kLayerNormEps = 1e-5f;  // PyTorch's default, which Whisper trains with

// config.max_tokens: encoder positions of the step (n_audio_ctx per window);
// config.max_frames: mel frames (2 per position).
// The graphs' weights point into `weights` (of `model`), which must outlive them.
graph::Graph build_encoder_graph(const Ct2Model& model, const WeightStore& weights, const WhisperSpec& spec,
                                 const graph::GraphConfig& config);

graph::Graph build_decoder_graph(const Ct2Model& model, const WeightStore& weights, const WhisperSpec& spec,
                                 const graph::GraphConfig& config);

}  // namespace rayo::whisper
