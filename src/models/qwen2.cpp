// Qwen2 / Qwen2.5: biases on the q, k, v projections; NeoX-style rope (halves).
#include "models/architecture.h"
#include "models/decoder.h"

namespace rayo::models {

graph::Graph build_qwen2(const gguf::File& file, const ModelSpec& spec, const graph::GraphConfig& config) {
  return build_decoder_graph(file, spec, DecoderVariant{graph::RopeType::NeoX, true, false}, config);
}

}  // namespace rayo::models
