#include "graph/memory_plan.h"

#include <algorithm>
#include <map>
#include <vector>

#include "common/error.h"

namespace rayo::graph {
namespace {

size_t align_up(size_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

}  // namespace

size_t ArenaAllocator::allocate(size_t size) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second >= size) {
      size_t offset = it->first;
      size_t remaining = it->second - size;
      free_.erase(it);
      if (remaining) free_[offset + size] = remaining;
      return offset;
    }
  }
  // Grow: extend a free block that touches the end, else append.
  size_t offset = high_water_;
  if (!free_.empty()) {
    auto last = std::prev(free_.end());
    if (last->first + last->second == high_water_) {
      offset = last->first;
      free_.erase(last);
    }
  }
  high_water_ = offset + size;
  return offset;
}

void ArenaAllocator::release(size_t offset, size_t size) {
  auto [it, inserted] = free_.emplace(offset, size);
  RAYO_CHECK(inserted, "double release in the memory planner");
  auto next = std::next(it);
  if (next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_.erase(it);
    }
  }
}

void plan_memory(Graph& graph) {
  const auto& nodes = graph.nodes();
  auto& values = graph.mutable_values();
  const int n_nodes = static_cast<int>(nodes.size());
  std::vector<int> last_use(values.size(), -1);
  std::vector<int> defined_at(values.size(), -1);
  for (int i = 0; i < n_nodes; ++i) {
    for (int in : nodes[i].in)
      if (in >= 0) last_use[in] = i;
    if (nodes[i].out >= 0) {
      RAYO_CHECK(defined_at[nodes[i].out] < 0, "value ", values[nodes[i].out].name, " written twice");
      defined_at[nodes[i].out] = i;
    }
  }
  if (graph.output() >= 0) last_use[graph.output()] = n_nodes;  // read after the step

  ArenaAllocator arena;
  std::vector<std::vector<int>> frees_after(n_nodes + 1);
  for (size_t v = 0; v < values.size(); ++v)
    if (defined_at[v] >= 0) frees_after[std::max(last_use[v], defined_at[v])].push_back(static_cast<int>(v));

  for (int i = 0; i < n_nodes; ++i) {
    if (nodes[i].out >= 0) {
      Value& v = values[nodes[i].out];
      v.offset = arena.allocate(align_up(graph.value_bytes(v)));
    }
    for (int v : frees_after[i]) arena.release(values[v].offset, align_up(graph.value_bytes(values[v])));
  }
  graph.set_arena_bytes(arena.high_water());
}

}  // namespace rayo::graph
