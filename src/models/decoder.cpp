#include "models/decoder.h"

#include "common/error.h"
#include "models/weights.h"

namespace rayo::models {
namespace {

using graph::Graph;
using graph::Node;
using graph::Op;
using graph::RowSpace;

// Small helpers that append one node and return its output value.
class Builder {
 public:
  explicit Builder(Graph& g) : g_(g) {}

  int weight(const graph::Weight& w) { return g_.add_weight(w); }

  int value(int64_t cols, RowSpace rows, const std::string& name) { return g_.add_value(cols, rows, name); }

  int unary(Op op, int in, int64_t cols, RowSpace rows, const std::string& name, Node node = Node{}) {
    node.op = op;
    node.in[0] = in;
    node.out = value(cols, rows, name);
    g_.add_node(node);
    return node.out;
  }

  int matmul(int in, int w, RowSpace rows, const std::string& name) {
    Node n{};
    n.weight = w;
    return unary(Op::MatMul, in, g_.weights()[w].rows, rows, name, n);
  }

  int add_bias(int in, int bias, RowSpace rows, const std::string& name) {
    Node n{};
    n.weight = bias;
    return unary(Op::AddBias, in, g_.values()[in].cols, rows, name, n);
  }

  int rms_norm(int in, int w, float eps, int group, RowSpace rows, const std::string& name) {
    Node n{};
    n.weight = w;
    n.eps = eps;
    n.group = group;
    return unary(Op::RmsNorm, in, g_.values()[in].cols, rows, name, n);
  }

  int binary(Op op, int a, int b, const std::string& name) {
    Node n{};
    n.op = op;
    n.in[0] = a;
    n.in[1] = b;
    n.out = value(g_.values()[a].cols, g_.values()[a].rows, name);
    g_.add_node(n);
    return n.out;
  }

 private:
  Graph& g_;
};

}  // namespace

graph::Graph build_decoder_graph(const gguf::File& file, const ModelSpec& spec, const graph::GraphConfig& config) {
  Graph g(config);
  Builder b(g);
  const int64_t n_embd = spec.n_embd;
  const int64_t n_ff = spec.n_ff;
  const int64_t n_vocab = spec.n_vocab;
  const int64_t head_dim = spec.head_dim;
  const int64_t q_width = spec.q_dim();
  const int64_t kv_width = spec.kv_dim();
  const float eps = spec.rms_eps;
  const auto T = RowSpace::Tokens;

  const int tok_embd = b.weight(require_weight(file, "token_embd.weight", n_embd, n_vocab));
  graph::RopeParams rope;
  rope.type = spec.rope_type;
  rope.n_rot = static_cast<int>(spec.rope_dim);
  rope.freq_base = spec.rope_freq_base;
  rope.freq_scale = spec.rope_freq_scale;
  if (auto factors = optional_weight(file, "rope_freqs.weight", spec.rope_dim / 2)) rope.freq_factors = b.weight(*factors);
  // Sliding-window layers rotate with their own base, unscaled (llama.cpp's
  // rope_freq_base_train_swa / rope_freq_scale_train_swa).
  graph::RopeParams sliding_rope = rope;
  sliding_rope.freq_base = spec.rope_freq_base_swa;
  sliding_rope.freq_scale = 1.0f;

  Node embed{};
  embed.weight = tok_embd;
  embed.scale = spec.embedding_scale;
  int x = b.unary(Op::Embed, -1, n_embd, T, "embd", embed);

  for (int l = 0; l < static_cast<int>(spec.n_layers); ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    auto W = [&](const char* suffix, int64_t cols, int64_t rows = 1) {
      return b.weight(require_weight(file, layer_tensor(l, suffix), cols, rows));
    };
    int h = b.rms_norm(x, W("attn_norm.weight", n_embd), eps, static_cast<int>(n_embd), T, p + "attn_norm");
    int q = b.matmul(h, W("attn_q.weight", n_embd, q_width), T, p + "q");
    int k = b.matmul(h, W("attn_k.weight", n_embd, kv_width), T, p + "k");
    int v = b.matmul(h, W("attn_v.weight", n_embd, kv_width), T, p + "v");
    if (spec.qkv_bias) {
      q = b.add_bias(q, W("attn_q.bias", q_width), T, p + "q_bias");
      k = b.add_bias(k, W("attn_k.bias", kv_width), T, p + "k_bias");
      v = b.add_bias(v, W("attn_v.bias", kv_width), T, p + "v_bias");
    }
    if (spec.qk_norm) {
      q = b.rms_norm(q, W("attn_q_norm.weight", head_dim), eps, static_cast<int>(head_dim), T, p + "q_norm");
      k = b.rms_norm(k, W("attn_k_norm.weight", head_dim), eps, static_cast<int>(head_dim), T, p + "k_norm");
    }
    const bool sliding = spec.is_sliding(static_cast<uint32_t>(l));
    Node rope_node{};
    rope_node.rope = sliding ? sliding_rope : rope;
    rope_node.head_dim = static_cast<int>(head_dim);
    rope_node.n_head = static_cast<int>(spec.n_head);
    q = b.unary(Op::Rope, q, q_width, T, p + "q_rope", rope_node);
    rope_node.n_head = static_cast<int>(spec.n_head_kv);
    k = b.unary(Op::Rope, k, kv_width, T, p + "k_rope", rope_node);

    Node store{};
    store.op = Op::KvStore;
    store.in[0] = k;
    store.in[1] = v;
    store.layer = l;
    store.n_head_kv = static_cast<int>(spec.n_head_kv);
    store.head_dim = static_cast<int>(head_dim);
    g.add_node(store);

    Node attn{};
    attn.layer = l;
    attn.n_head = static_cast<int>(spec.n_head);
    attn.n_head_kv = static_cast<int>(spec.n_head_kv);
    attn.head_dim = static_cast<int>(head_dim);
    attn.scale = spec.attention_scale;
    attn.window = sliding ? static_cast<int>(spec.sliding_window) : 0;
    int a = b.unary(Op::Attention, q, q_width, T, p + "attn", attn);
    int o = b.matmul(a, W("attn_output.weight", q_width, n_embd), T, p + "attn_out");
    if (spec.post_norms)
      o = b.rms_norm(o, W("post_attention_norm.weight", n_embd), eps, static_cast<int>(n_embd), T, p + "attn_post_norm");
    x = b.binary(Op::Add, x, o, p + "attn_residual");

    h = b.rms_norm(x, W("ffn_norm.weight", n_embd), eps, static_cast<int>(n_embd), T, p + "ffn_norm");
    int gate = b.matmul(h, W("ffn_gate.weight", n_embd, n_ff), T, p + "ffn_gate");
    int up = b.matmul(h, W("ffn_up.weight", n_embd, n_ff), T, p + "ffn_up");
    Node glu{};
    glu.act = spec.ffn_act;
    glu.in[1] = up;
    int act = b.unary(Op::Glu, gate, n_ff, T, p + "ffn_act", glu);
    int down = b.matmul(act, W("ffn_down.weight", n_ff, n_embd), T, p + "ffn_down");
    if (spec.post_norms)
      down = b.rms_norm(down, W("post_ffw_norm.weight", n_embd), eps, static_cast<int>(n_embd), T, p + "ffn_post_norm");
    x = b.binary(Op::Add, x, down, p + "ffn_residual");
  }

  const auto O = RowSpace::Outputs;
  x = b.unary(Op::SelectRows, x, n_embd, O, "out_rows");
  x = b.rms_norm(x, b.weight(require_weight(file, "output_norm.weight", n_embd)), eps, static_cast<int>(n_embd), O,
                 "output_norm");
  auto output = optional_weight(file, "output.weight", n_embd, n_vocab);
  const int out_w = output ? b.weight(*output) : tok_embd;  // tied embeddings
  g.set_output(b.matmul(x, out_w, O, "logits"));
  return g;
}

}  // namespace rayo::models
