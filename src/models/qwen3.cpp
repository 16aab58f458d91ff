// Qwen3 (dense): no projection biases; an RMSNorm over each q and k head before
// rope; NeoX-style rope.
#include "models/architecture.h"
#include "models/decoder.h"

namespace rayo::models {

graph::Graph build_qwen3(const gguf::File& file, const ModelSpec& spec, const graph::GraphConfig& config) {
  return build_decoder_graph(file, spec, DecoderVariant{graph::RopeType::NeoX, false, true}, config);
}

}  // namespace rayo::models
