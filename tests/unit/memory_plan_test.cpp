#include <gtest/gtest.h>

#include "graph/memory_plan.h"

namespace rayo::graph {
namespace {

// A chain a -> b -> c -> d: each value dies after its single reader, so the
// planner must reuse memory and never overlap two live values.
TEST(MemoryPlan, ReusesDeadValuesAndNeverOverlapsLiveOnes) {
  Graph g(GraphConfig{4, 1});
  const int w = g.add_weight(Weight{"w", TensorType::F32, 64, 64, nullptr});
  std::vector<int> values;
  int prev = -1;
  for (int i = 0; i < 6; ++i) {
    Node n{};
    n.op = i == 0 ? Op::Embed : Op::MatMul;
    n.weight = w;
    n.in[0] = prev;
    n.out = g.add_value(64, RowSpace::Tokens, "v" + std::to_string(i));
    g.add_node(n);
    values.push_back(n.out);
    prev = n.out;
  }
  // A residual that keeps v0 alive to the end.
  Node add{};
  add.op = Op::Add;
  add.in[0] = values[0];
  add.in[1] = prev;
  add.out = g.add_value(64, RowSpace::Tokens, "sum");
  g.add_node(add);
  g.set_output(add.out);
  plan_memory(g);

  const size_t one = g.value_bytes(g.values()[0]);
  size_t total = 0;
  for (const auto& v : g.values()) total += g.value_bytes(v);
  EXPECT_LT(g.arena_bytes(), total) << "no reuse happened";
  EXPECT_GE(g.arena_bytes(), 3 * one) << "v0, the previous and the current value are live together";

  // Lifetimes: value i is written by node i and read by node i+1 (v0 also by the last node).
  auto overlaps = [&](int a, int b) {
    const auto& va = g.values()[a];
    const auto& vb = g.values()[b];
    return va.offset < vb.offset + g.value_bytes(vb) && vb.offset < va.offset + g.value_bytes(va);
  };
  for (size_t i = 1; i + 1 < values.size(); ++i) {
    EXPECT_FALSE(overlaps(values[i], values[i + 1])) << "a node's input and output share memory";
    EXPECT_FALSE(overlaps(values[0], values[i])) << "v0 is live until the end";
  }
  EXPECT_FALSE(overlaps(values[0], add.out));
  EXPECT_FALSE(overlaps(prev, add.out));
  for (const auto& v : g.values()) EXPECT_EQ(v.offset % kArenaAlignment, 0u);
}

}  // namespace
}  // namespace rayo::graph
