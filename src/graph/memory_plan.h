#pragma once
// Assigns every activation value an offset in one arena so that values whose
// lifetimes do not overlap share memory. A value lives from the node that
// writes it to the last node that reads it; the graph's output lives to the end.
#include <cstddef>

#include "graph/graph.h"

namespace rayo::graph {

// Alignment of every value in the arena (bytes): enough for AVX-512 and for
// coalesced GPU access.
constexpr size_t kArenaAlignment = 256;

// Sets Value::offset for every value and the graph's arena size.
void plan_memory(Graph& graph);

}  // namespace rayo::graph
