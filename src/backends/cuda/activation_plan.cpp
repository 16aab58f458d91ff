#include "backends/cuda/activation_plan.h"

#include <algorithm>

#include "backends/cuda/dense_gemm_choice.h"
#include "backends/cuda/weight_layout.h"
#include "common/error.h"
#include "graph/memory_plan.h"

namespace rayo::cuda {

using graph::Graph;
using graph::Node;
using graph::Op;

bool reads_q8(const Graph& g, const Node& n) {
  const auto ws = graph::matrix_weights(n);
  if (ws.empty()) return false;
  for (int w : ws)
    if (!has_gpu_layout(g.weights()[w].type)) return false;
  return true;
}

namespace {

// The RMSNorm weight folded into a matmul node, or -1.
int fused_norm(const Node& n) {
  if (n.op == Op::RmsNormMatMul) return n.aux[0];
  if (n.op == Op::GateUpGlu || n.op == Op::QkvRopeStore) return n.aux[0];
  return -1;
}

// Whether node w's kernel can write the twin of its output in its epilogue
// (a dense GEMM's cannot: uses_dense_gemm).
bool can_emit(const Graph& g, const Node& w, const Twin& t) {
  if (uses_dense_gemm(g, w)) return false;
  switch (w.op) {
    case Op::Embed:
    case Op::SelectRows:
    case Op::MatMul:
    case Op::RmsNormMatMul:
    case Op::MatMulAdd:
    case Op::GateUpGlu: return true;
    // One block per head: its blocks of 32 columns must not straddle heads.
    case Op::Attention: return w.head_dim % 32 == 0;
    default: return false;
  }
  (void)t;
}

size_t align_up(size_t n) { return (n + graph::kArenaAlignment - 1) / graph::kArenaAlignment * graph::kArenaAlignment; }

}  // namespace

ActivationPlan plan_activations(const Graph& g) {
  const auto& nodes = g.nodes();
  const int n_nodes = static_cast<int>(nodes.size());
  ActivationPlan plan;
  plan.input_twin.assign(n_nodes, -1);
  plan.emits.assign(n_nodes, -1);
  plan.quantize_before.assign(n_nodes, {});

  // What each matmul needs of its input.
  for (int i = 0; i < n_nodes; ++i) {
    const Node& n = nodes[i];
    // A dense GEMM reads its input as f32 (dense_gemm_choice.h).
    if (graph::matrix_weights(n).empty() || uses_dense_gemm(g, n)) continue;
    const bool q8 = reads_q8(g, n);
    const int norm = fused_norm(n);
    if (!q8 && norm < 0) continue;  // the float path reads x as it is
    const int x = n.in[0];
    int found = -1;
    for (int t = 0; t < static_cast<int>(plan.twins.size()) && found < 0; ++t) {
      const Twin& tw = plan.twins[t];
      if (tw.value == x && (!q8 || !tw.q8 || tw.norm_weight == norm)) found = t;
    }
    if (found < 0) {
      Twin tw;
      tw.value = x;
      tw.first_reader = i;
      tw.cols = g.values()[x].cols;
      tw.max_rows = g.max_rows(g.values()[x]);
      plan.twins.push_back(tw);
      found = static_cast<int>(plan.twins.size()) - 1;
    }
    Twin& tw = plan.twins[found];
    if (q8) {
      RAYO_CHECK(tw.cols % 32 == 0, "8-bit activations of ", tw.cols, " columns");
      tw.q8 = true;
      tw.norm_weight = norm;
    }
    if (norm >= 0) tw.ss = true;
    tw.last_reader = i;
    plan.input_twin[i] = found;
  }

  // Who writes each twin.
  std::vector<int> writer_of(g.values().size(), -1);
  for (int i = 0; i < n_nodes; ++i)
    if (nodes[i].out >= 0) writer_of[nodes[i].out] = i;
  for (int t = 0; t < static_cast<int>(plan.twins.size()); ++t) {
    Twin& tw = plan.twins[t];
    const int w = writer_of[tw.value];
    if (w >= 0 && plan.emits[w] < 0 && can_emit(g, nodes[w], tw)) {
      tw.writer = w;
      plan.emits[w] = t;
    } else {
      plan.quantize_before[tw.first_reader].push_back(t);
    }
  }

  // Memory: live from the writer (or the quantize launch) to the last reader.
  graph::ArenaAllocator arena;
  std::vector<std::vector<int>> born(n_nodes), dies(n_nodes);
  for (int t = 0; t < static_cast<int>(plan.twins.size()); ++t) {
    const Twin& tw = plan.twins[t];
    born[tw.writer >= 0 ? tw.writer : tw.first_reader].push_back(t);
    dies[tw.last_reader].push_back(t);
  }
  auto sizes = [](const Twin& tw) {
    const size_t rows = static_cast<size_t>(tw.max_rows), cols = static_cast<size_t>(tw.cols);
    const size_t q = tw.q8 ? align_up(rows * cols) : 0, ds = tw.q8 ? align_up(rows * (cols / 32) * 8) : 0;
    const size_t ss = tw.ss ? align_up(rows * ((cols + 31) / 32) * 4) : 0;
    return std::make_tuple(q, ds, ss);
  };
  for (int i = 0; i < n_nodes; ++i) {
    for (int t : born[i]) {
      Twin& tw = plan.twins[t];
      const auto [q, ds, ss] = sizes(tw);
      const size_t base = arena.allocate(std::max<size_t>(q + ds + ss, graph::kArenaAlignment));
      tw.q_offset = base;
      tw.ds_offset = base + q;
      tw.ss_offset = base + q + ds;
    }
    for (int t : dies[i]) {
      const auto [q, ds, ss] = sizes(plan.twins[t]);
      arena.release(plan.twins[t].q_offset, std::max<size_t>(q + ds + ss, graph::kArenaAlignment));
    }
  }
  plan.arena_bytes = arena.high_water();
  return plan;
}

}  // namespace rayo::cuda
