#pragma once
// Assigns every activation value an offset in one arena so that values whose
// lifetimes do not overlap share memory. A value lives from the node that
// writes it to the last node that reads it; the graph's output lives to the end.
#include <cstddef>
#include <map>

#include "graph/graph.h"

namespace rayo::graph {

// Alignment of every value in the arena (bytes): enough for AVX-512 and for
// coalesced GPU access.
constexpr size_t kArenaAlignment = 256;

// First-fit allocation of byte ranges in an arena that grows as needed, with
// coalescing of released ranges (the planner below; the CUDA backend plans its
// 8-bit activation buffers with it too).
class ArenaAllocator {
 public:
  size_t allocate(size_t size);
  void release(size_t offset, size_t size);
  size_t high_water() const { return high_water_; }

 private:
  std::map<size_t, size_t> free_;  // offset -> size
  size_t high_water_ = 0;
};

// Sets Value::offset for every value and the graph's arena size.
void plan_memory(Graph& graph);

}  // namespace rayo::graph
