#include "graph/fusion_passes.h"

#include <string_view>

namespace rayo::graph {
namespace {

// Who writes and who reads each value, over the current node list.
struct Uses {
  std::vector<int> writer;               // node index or -1
  std::vector<std::vector<int>> readers;  // node indices
  explicit Uses(const Graph& g) : writer(g.values().size(), -1), readers(g.values().size()) {
    const auto& nodes = g.nodes();
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
      if (nodes[i].out >= 0) writer[nodes[i].out] = i;
      for (int in : nodes[i].in)
        if (in >= 0) readers[in].push_back(i);
    }
    if (g.output() >= 0) readers[g.output()].push_back(-1);  // read after the step
  }
  // The node writing v when v is read by exactly one node.
  int sole_writer(int v) const { return v >= 0 && readers[v].size() == 1 ? writer[v] : -1; }
};

// Removes the marked nodes, keeping the order of the others.
void erase_nodes(Graph& g, const std::vector<bool>& dead) {
  auto& nodes = g.mutable_nodes();
  std::vector<Node> kept;
  kept.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!dead[i]) kept.push_back(nodes[i]);
  nodes = std::move(kept);
}

class QkvFusion : public Pass {
 public:
  std::string_view name() const override { return "qkv_rope_store"; }
  int run(Graph& g) const override {
    int changes = 0;
    for (bool again = true; again;) {
      again = false;
      Uses u(g);
      auto& nodes = g.mutable_nodes();
      for (int s = 0; s < static_cast<int>(nodes.size()); ++s) {
        if (nodes[s].op != Op::KvStore) continue;
        const Node& store = nodes[s];
        // k side: Rope <- [AddBias] <- MatMul
        const int k_rope = u.sole_writer(store.in[0]);
        if (k_rope < 0 || nodes[k_rope].op != Op::Rope) continue;
        int k_bias = -1, k_mm = u.sole_writer(nodes[k_rope].in[0]);
        if (k_mm >= 0 && nodes[k_mm].op == Op::AddBias) k_bias = k_mm, k_mm = u.sole_writer(nodes[k_mm].in[0]);
        if (k_mm < 0 || nodes[k_mm].op != Op::MatMul) continue;
        int v_bias = -1, v_mm = u.sole_writer(store.in[1]);
        if (v_mm >= 0 && nodes[v_mm].op == Op::AddBias) v_bias = v_mm, v_mm = u.sole_writer(nodes[v_mm].in[0]);
        if (v_mm < 0 || nodes[v_mm].op != Op::MatMul) continue;
        const int x = nodes[k_mm].in[0];
        if (nodes[v_mm].in[0] != x) continue;
        // q side: the Rope whose MatMul reads the same x, with the same rope, whose
        // output is read by this layer's attention.
        int q_rope = -1, q_bias = -1, q_mm = -1;
        for (int r = 0; r < static_cast<int>(nodes.size()) && q_rope < 0; ++r) {
          if (r == k_rope || nodes[r].op != Op::Rope) continue;
          int b = -1, m = u.sole_writer(nodes[r].in[0]);
          if (m >= 0 && nodes[m].op == Op::AddBias) b = m, m = u.sole_writer(nodes[m].in[0]);
          if (m < 0 || nodes[m].op != Op::MatMul || nodes[m].in[0] != x) continue;
          const auto& readers = u.readers[nodes[r].out];
          if (readers.size() != 1 || readers[0] < 0 || nodes[readers[0]].op != Op::Attention ||
              nodes[readers[0]].layer != store.layer)
            continue;
          q_rope = r, q_bias = b, q_mm = m;
        }
        if (q_rope < 0) continue;
        if ((q_bias >= 0) != (k_bias >= 0) || (k_bias >= 0) != (v_bias >= 0)) continue;
        const Node& qr = nodes[q_rope];
        const Node& kr = nodes[k_rope];
        if (qr.rope.type != kr.rope.type || qr.rope.n_rot != kr.rope.n_rot || qr.rope.freq_base != kr.rope.freq_base ||
            qr.rope.freq_scale != kr.rope.freq_scale || qr.rope.freq_factors != kr.rope.freq_factors)
          continue;
        if (s < q_rope) continue;  // the fused node takes the KvStore's place: q must not be read before it

        Node f{};
        f.op = Op::QkvRopeStore;
        f.in[0] = x;
        f.out = qr.out;
        f.weight = nodes[q_mm].weight;
        f.aux[1] = nodes[k_mm].weight;
        f.aux[2] = nodes[v_mm].weight;
        if (q_bias >= 0) {
          f.aux[3] = nodes[q_bias].weight;
          f.aux[4] = nodes[k_bias].weight;
          f.aux[5] = nodes[v_bias].weight;
        }
        f.layer = store.layer;
        f.n_head = qr.n_head;
        f.n_head_kv = store.n_head_kv;
        f.head_dim = store.head_dim;
        f.rope = qr.rope;
        std::vector<bool> dead(nodes.size(), false);
        for (int d : {q_mm, k_mm, v_mm, q_rope, k_rope, q_bias, k_bias, v_bias})
          if (d >= 0) dead[d] = true;
        nodes[s] = f;
        erase_nodes(g, dead);
        ++changes;
        again = true;
        break;
      }
    }
    return changes;
  }
};

class GateUpFusion : public Pass {
 public:
  std::string_view name() const override { return "gate_up_glu"; }
  int run(Graph& g) const override {
    int changes = 0;
    Uses u(g);
    auto& nodes = g.mutable_nodes();
    std::vector<bool> dead(nodes.size(), false);
    for (auto& n : nodes) {
      if (n.op != Op::Glu) continue;
      const int gm = u.sole_writer(n.in[0]), um = u.sole_writer(n.in[1]);
      if (gm < 0 || um < 0 || nodes[gm].op != Op::MatMul || nodes[um].op != Op::MatMul) continue;
      if (nodes[gm].in[0] != nodes[um].in[0]) continue;
      Node f{};
      f.op = Op::GateUpGlu;
      f.in[0] = nodes[gm].in[0];
      f.out = n.out;
      f.weight = nodes[gm].weight;
      f.aux[1] = nodes[um].weight;
      f.act = n.act;
      n = f;
      dead[gm] = dead[um] = true;
      ++changes;
    }
    erase_nodes(g, dead);
    return changes;
  }
};

class NormFusion : public Pass {
 public:
  std::string_view name() const override { return "rms_norm_matmul"; }
  int run(Graph& g) const override {
    int changes = 0;
    Uses u(g);
    auto& nodes = g.mutable_nodes();
    std::vector<bool> dead(nodes.size(), false);
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
      const Node& norm = nodes[i];
      if (norm.op != Op::RmsNorm || norm.group != g.values()[norm.out].cols) continue;
      const auto& readers = u.readers[norm.out];
      bool ok = !readers.empty();
      for (int r : readers)
        ok = ok && r >= 0 && nodes[r].in[0] == norm.out && nodes[r].in[1] != norm.out &&
             (nodes[r].op == Op::MatMul || nodes[r].op == Op::GateUpGlu || nodes[r].op == Op::QkvRopeStore);
      if (!ok) continue;
      for (int r : readers) {
        Node& n = nodes[r];
        if (n.op == Op::MatMul) n.op = Op::RmsNormMatMul;
        n.in[0] = norm.in[0];
        n.aux[0] = norm.weight;
        n.eps = norm.eps;
        n.group = norm.group;
      }
      dead[i] = true;
      ++changes;
    }
    erase_nodes(g, dead);
    return changes;
  }
};

class ResidualFusion : public Pass {
 public:
  std::string_view name() const override { return "matmul_add"; }
  int run(Graph& g) const override {
    int changes = 0;
    Uses u(g);
    auto& nodes = g.mutable_nodes();
    std::vector<bool> dead(nodes.size(), false);
    for (auto& n : nodes) {
      if (n.op != Op::Add) continue;
      for (int side = 1; side >= 0; --side) {  // the residual stream is usually in[0]
        const int m = u.sole_writer(n.in[side]);
        if (m < 0 || nodes[m].op != Op::MatMul || dead[m]) continue;
        Node f = nodes[m];
        f.op = Op::MatMulAdd;
        f.in[1] = n.in[1 - side];
        f.out = n.out;
        n = f;
        dead[m] = true;
        ++changes;
        break;
      }
    }
    erase_nodes(g, dead);
    return changes;
  }
};

}  // namespace

std::unique_ptr<Pass> make_qkv_fusion() { return std::make_unique<QkvFusion>(); }
std::unique_ptr<Pass> make_gate_up_fusion() { return std::make_unique<GateUpFusion>(); }
std::unique_ptr<Pass> make_norm_fusion() { return std::make_unique<NormFusion>(); }
std::unique_ptr<Pass> make_residual_fusion() { return std::make_unique<ResidualFusion>(); }

std::vector<std::unique_ptr<Pass>> decoder_fusion_passes() {
  std::vector<std::unique_ptr<Pass>> p;
  p.push_back(make_qkv_fusion());
  p.push_back(make_gate_up_fusion());
  p.push_back(make_norm_fusion());
  p.push_back(make_residual_fusion());
  return p;
}

}  // namespace rayo::graph
