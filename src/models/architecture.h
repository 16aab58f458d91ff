#pragma once
// The architectures rayo runs, by their GGUF `general.architecture` name.
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "graph/graph.h"
#include "models/model_spec.h"

namespace rayo::models {

using GraphBuilder = graph::Graph (*)(const gguf::File& file, const ModelSpec& spec, const graph::GraphConfig& config);

struct Architecture {
  std::string_view name;
  GraphBuilder build;
};

// All supported architectures (supported_architectures(), each with its graph builder).
const std::vector<Architecture>& architectures();

// The architecture named by the file's spec; throws "unsupported architecture 'X' (supported: ...)".
const Architecture& find_architecture(std::string_view name);

}  // namespace rayo::models
