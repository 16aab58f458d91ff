#include "graph/graph.h"

#include <map>
#include <sstream>

#include "common/error.h"
#include "common/strings.h"

namespace rayo::graph {

std::string_view op_name(Op op) {
  switch (op) {
    case Op::Embed: return "embed";
    case Op::RmsNorm: return "rms_norm";
    case Op::MatMul: return "matmul";
    case Op::AddBias: return "add_bias";
    case Op::Add: return "add";
    case Op::Glu: return "glu";
    case Op::Rope: return "rope";
    case Op::KvStore: return "kv_store";
    case Op::Attention: return "attention";
    case Op::SelectRows: return "select_rows";
    case Op::LayerNorm: return "layer_norm";
    case Op::Gelu: return "gelu";
    case Op::Unfold: return "unfold";
    case Op::AddPosition: return "add_position";
    case Op::DenseAttention: return "dense_attention";
    case Op::CrossKvStore: return "cross_kv_store";
    case Op::CrossAttention: return "cross_attention";
    case Op::RmsNormMatMul: return "rms_norm_matmul";
    case Op::MatMulAdd: return "matmul_add";
    case Op::GateUpGlu: return "gate_up_glu";
    case Op::QkvRopeStore: return "qkv_rope_store";
  }
  return "?";
}

int Graph::add_weight(const Weight& w) {
  weights_.push_back(w);
  return static_cast<int>(weights_.size()) - 1;
}

int Graph::add_value(int64_t cols, RowSpace rows, std::string name) {
  RAYO_CHECK(cols > 0, "value ", name, " has no columns");
  values_.push_back(Value{cols, rows, std::move(name), 0});
  return static_cast<int>(values_.size()) - 1;
}

std::vector<int> matrix_weights(const Node& n) {
  switch (n.op) {
    case Op::MatMul:
    case Op::RmsNormMatMul:
    case Op::MatMulAdd: return {n.weight};
    case Op::GateUpGlu: return {n.weight, n.aux[1]};
    case Op::QkvRopeStore: return {n.weight, n.aux[1], n.aux[2]};
    default: return {};
  }
}

std::vector<int> vector_weights(const Node& n) {
  std::vector<int> v;
  if (n.op == Op::RmsNorm || n.op == Op::AddBias || n.op == Op::LayerNorm || n.op == Op::AddPosition)
    v.push_back(n.weight);
  if (n.op == Op::LayerNorm) v.push_back(n.aux[0]);  // the bias
  if (n.op == Op::Rope || n.op == Op::QkvRopeStore) v.push_back(n.rope.freq_factors);
  if (!matrix_weights(n).empty()) v.insert(v.end(), {n.aux[0], n.aux[3], n.aux[4], n.aux[5]});
  std::erase(v, -1);
  return v;
}

int Graph::add_node(const Node& node) {
  nodes_.push_back(node);
  return static_cast<int>(nodes_.size()) - 1;
}

int64_t Graph::max_rows(const Value& v) const {
  switch (v.rows) {
    case RowSpace::Tokens: return config_.max_tokens;
    case RowSpace::Outputs: return config_.max_outputs;
    case RowSpace::Frames: return config_.max_frames;
  }
  return 0;
}

std::string Graph::describe() const {
  std::ostringstream out;
  std::map<std::string_view, int> op_counts;
  for (const auto& n : nodes_) ++op_counts[op_name(n.op)];
  // The values some node still writes (fusion leaves the intermediates it
  // removed in the table, unused).
  size_t unplanned = 0, live = 0;
  for (const auto& n : nodes_)
    if (n.out >= 0) unplanned += value_bytes(values_[n.out]), ++live;
  out << "graph: " << nodes_.size() << " nodes per step, up to " << config_.max_tokens << " tokens and "
      << config_.max_outputs << " output rows a step\n";
  out << "  ops:";
  for (const auto& [name, count] : op_counts) out << " " << name << "=" << count;
  out << "\n  buffers: " << live << " activation values, " << format_bytes(unplanned)
      << " unshared, planned into a " << format_bytes(arena_bytes_) << " arena\n";
  return out.str();
}

}  // namespace rayo::graph
