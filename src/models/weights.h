#pragma once
// Looks up a model's tensors by their llama.cpp names and checks their shapes,
// so that a file with a missing or misshapen tensor is refused at load with its
// name, not discovered as garbage output.
#include <cstdint>
#include <optional>
#include <string>

#include "gguf/file.h"
#include "graph/graph.h"

namespace rayo::models {

// The tensor `name` as a graph weight of `rows` vectors of `cols` values
// (GGUF dims ne = [cols, rows]; a 1-D tensor has rows = 1). Throws
// "missing tensor 'NAME'" or "tensor 'NAME' has shape [a, b], expected [c, d]".
graph::Weight require_weight(const gguf::File& file, const std::string& name, int64_t cols, int64_t rows = 1);

// Same, but absent is allowed (nullopt); a present tensor must still have the shape.
std::optional<graph::Weight> optional_weight(const gguf::File& file, const std::string& name, int64_t cols,
                                             int64_t rows = 1);

// "blk.3.attn_q.weight" from (3, "attn_q.weight").
std::string layer_tensor(int layer, const char* suffix);

}  // namespace rayo::models
