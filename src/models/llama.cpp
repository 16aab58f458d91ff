// Llama 2/3, Mistral, TinyLlama, SmolLM: the plain decoder. llama.cpp's converter
// permutes the q/k projections so that rope rotates adjacent pairs ("normal").
#include "models/architecture.h"
#include "models/decoder.h"

namespace rayo::models {

graph::Graph build_llama(const gguf::File& file, const ModelSpec& spec, const graph::GraphConfig& config) {
  return build_decoder_graph(file, spec, DecoderVariant{graph::RopeType::Normal, false, false}, config);
}

}  // namespace rayo::models
