#include "whisper/whisper_graphs.h"

#include <string>

#include "common/error.h"

namespace rayo::whisper {
namespace {

using graph::Graph;
using graph::Node;
using graph::Op;
using graph::RowSpace;

// Appends nodes to a graph; each call returns its output value.
class WhisperBuilder {
 public:
  WhisperBuilder(Graph& g, const Ct2Model& model, const WeightStore& weights, const WhisperSpec& spec)
      : g_(g), model_(model), weights_(weights), spec_(spec) {}

  // Rows [row0, row0 + rows) of a variable, seen as `rows` x cols (cols: the
  // product of its other dimensions); rows = -1: all of them.
  int weight(const std::string& name, int64_t row0 = 0, int64_t rows = -1) {
    const Ct2Variable& v = model_.get(name);
    const TensorType type = weights_.type(v);
    if (v.shape.empty()) fail(model_.path(), ": variable '", name, "' is a scalar, not a tensor");
    const int64_t all_rows = v.shape[0];
    const int64_t cols = static_cast<int64_t>(v.elements()) / all_rows;
    if (rows < 0) rows = all_rows - row0;
    RAYO_CHECK(row0 >= 0 && row0 + rows <= all_rows, name, ": rows ", row0, "+", rows, " of ", all_rows);
    graph::Weight w;
    w.name = name;
    w.type = type;
    w.rows = rows;
    w.cols = cols;
    w.data = weights_.data(v) + static_cast<size_t>(row0) * row_bytes(type, cols);
    w.file_backed = weights_.in_file(v);
    return g_.add_weight(w);
  }
  // A vector variable of `n` values (norm weights, biases): checked, then the whole of it or rows of it.
  int vector(const std::string& name, int64_t n, int64_t row0 = 0) {
    const Ct2Variable& v = model_.get(name);
    if (v.shape.size() != 1 || static_cast<int64_t>(v.shape[0]) < row0 + n)
      fail(model_.path(), ": variable '", name, "' is not a vector of ", row0 + n, " values");
    return weight(name, row0, n);
  }

  int node(Node n, int64_t cols, RowSpace rows, const std::string& name) {
    n.out = g_.add_value(cols, rows, name);
    g_.add_node(n);
    return n.out;
  }

  int linear(int x, int w, int bias, RowSpace rows, const std::string& name) {
    Node m{};
    m.op = Op::MatMul;
    m.in[0] = x;
    m.weight = w;
    int y = node(m, g_.weights()[w].rows, rows, name);
    if (bias < 0) return y;
    Node b{};
    b.op = Op::AddBias;
    b.in[0] = y;
    b.weight = bias;
    return node(b, g_.weights()[w].rows, rows, name + "+b");
  }
  // A variable's linear_i: weight rows [row0, row0 + n) and the same rows of its bias.
  int linear(int x, const std::string& prefix, int64_t row0, int64_t n, RowSpace rows, const std::string& name) {
    const int w = weight(prefix + "/weight", row0, n);
    const int b = vector(prefix + "/bias", n, row0);
    return linear(x, w, b, rows, name);
  }

  int layer_norm(int x, const std::string& prefix, RowSpace rows, const std::string& name) {
    const int64_t cols = g_.values()[x].cols;
    Node n{};
    n.op = Op::LayerNorm;
    n.in[0] = x;
    n.weight = vector(prefix + "/gamma", cols);
    n.aux[0] = vector(prefix + "/beta", cols);
    n.eps = kLayerNormEps;
    return node(n, cols, rows, name);
  }

  int unary(Op op, int x, RowSpace rows, const std::string& name) {
    Node n{};
    n.op = op;
    n.in[0] = x;
    return node(n, g_.values()[x].cols, rows, name);
  }

  int add(int a, int b, RowSpace rows, const std::string& name) {
    Node n{};
    n.op = Op::Add;
    n.in[0] = a;
    n.in[1] = b;
    return node(n, g_.values()[a].cols, rows, name);
  }

  int add_position(int x, const std::string& variable, RowSpace rows, const std::string& name) {
    Node n{};
    n.op = Op::AddPosition;
    n.in[0] = x;
    n.weight = weight(variable);
    RAYO_CHECK(g_.weights()[n.weight].cols == g_.values()[x].cols, variable, " has the wrong width");
    return node(n, g_.values()[x].cols, rows, name);
  }

  // The GELU MLP of a block, its LayerNorm first: fc2(gelu(fc1(ln(x)))).
  int mlp(int x, const std::string& prefix, RowSpace rows, const std::string& name) {
    const int64_t width = g_.values()[x].cols;
    const int h = layer_norm(x, prefix + "/layer_norm", rows, name + ".ffn_norm");
    const int f = linear(h, prefix + "/linear_0", 0, spec_.n_ffn, rows, name + ".fc1");
    const int a = unary(Op::Gelu, f, rows, name + ".gelu");
    return linear(a, prefix + "/linear_1", 0, width, rows, name + ".fc2");
  }

  Node heads(Op op, int layer, int n_head, int64_t width) const {
    Node n{};
    n.op = op;
    n.layer = layer;
    n.n_head = n_head;
    n.n_head_kv = n_head;
    n.head_dim = static_cast<int>(width / n_head);
    return n;
  }

 private:
  Graph& g_;
  const Ct2Model& model_;
  const WeightStore& weights_;
  const WhisperSpec& spec_;
};

std::string layer_prefix(const char* stack, uint32_t l) { return std::string(stack) + "/layer_" + std::to_string(l); }

}  // namespace

Graph build_encoder_graph(const Ct2Model& model, const WeightStore& weights, const WhisperSpec& spec,
                          const graph::GraphConfig& config) {
  RAYO_CHECK(config.max_frames >= 2 * config.max_tokens - 1, "an encoder graph needs two frames per position");
  Graph g(config);
  WhisperBuilder b(g, model, weights, spec);
  const auto T = RowSpace::Tokens;
  const auto F = RowSpace::Frames;
  const int64_t D = spec.n_audio_state;

  // Front end: each convolution is its input unfolded (3 frames a row) times
  // the kernel [D][channels][3] seen as a D x (channels * 3) matrix, plus the bias.
  auto conv = [&](int in, int64_t channels, int stride, RowSpace rows, const std::string& name) {
    Node unfold{};
    unfold.op = Op::Unfold;
    unfold.in[0] = in;
    unfold.stride = stride;
    const int u = b.node(unfold, 3 * channels, rows, name + ".unfold");
    const int y = b.linear(u, b.weight("encoder/" + name + "/weight"), b.vector("encoder/" + name + "/bias", D), rows, name);
    return b.unary(Op::Gelu, y, rows, name + ".gelu");
  };
  int x = conv(-1, spec.n_mels, 1, F, "conv1");
  x = conv(x, D, 2, T, "conv2");
  x = b.add_position(x, "encoder/position_encodings/encodings", T, "enc.pos");

  for (uint32_t l = 0; l < spec.n_audio_layer; ++l) {
    const std::string p = layer_prefix("encoder", l);
    const std::string name = "enc." + std::to_string(l);
    const int h = b.layer_norm(x, p + "/self_attention/layer_norm", T, name + ".attn_norm");
    const std::string qkv = p + "/self_attention/linear_0";
    const int q = b.linear(h, qkv, 0, D, T, name + ".q");
    const int k = b.linear(h, qkv, D, D, T, name + ".k");
    const int v = b.linear(h, qkv, 2 * D, D, T, name + ".v");
    Node attn = b.heads(Op::DenseAttention, -1, static_cast<int>(spec.n_audio_head), D);
    attn.in[0] = q;
    attn.in[1] = k;
    attn.in[2] = v;
    const int a = b.node(attn, D, T, name + ".attn");
    x = b.add(x, b.linear(a, p + "/self_attention/linear_1", 0, D, T, name + ".attn_out"), T, name + ".attn_res");
    x = b.add(x, b.mlp(x, p + "/ffn", T, name), T, name + ".ffn_res");
  }
  const int e = b.layer_norm(x, "encoder/layer_norm", T, "enc.out");

  // Each decoder layer's cross-attention keys and values, once per window.
  const int64_t width = spec.n_text_state;
  for (uint32_t l = 0; l < spec.n_text_layer; ++l) {
    const std::string kv = layer_prefix("decoder", l) + "/attention/linear_1";
    const std::string name = "cross." + std::to_string(l);
    const int k = b.linear(e, kv, 0, width, T, name + ".k");
    const int v = b.linear(e, kv, width, width, T, name + ".v");
    Node store = b.heads(Op::CrossKvStore, static_cast<int>(l), static_cast<int>(spec.n_text_head), width);
    store.in[0] = k;
    store.in[1] = v;
    g.add_node(store);
  }
  g.set_output(e);
  return g;
}

Graph build_decoder_graph(const Ct2Model& model, const WeightStore& weights, const WhisperSpec& spec,
                          const graph::GraphConfig& config) {
  Graph g(config);
  WhisperBuilder b(g, model, weights, spec);
  const auto T = RowSpace::Tokens;
  const int64_t D = spec.n_text_state;
  const int n_head = static_cast<int>(spec.n_text_head);

  const int embedding = b.weight("decoder/embeddings/weight");
  Node embed{};
  embed.op = Op::Embed;
  embed.weight = embedding;
  int x = b.node(embed, D, T, "tok_embd");
  x = b.add_position(x, "decoder/position_encodings/encodings", T, "dec.pos");

  for (uint32_t l = 0; l < spec.n_text_layer; ++l) {
    const std::string p = layer_prefix("decoder", l);
    const std::string name = "dec." + std::to_string(l);
    const int layer = static_cast<int>(l);

    int h = b.layer_norm(x, p + "/self_attention/layer_norm", T, name + ".attn_norm");
    const std::string qkv = p + "/self_attention/linear_0";
    const int q = b.linear(h, qkv, 0, D, T, name + ".q");
    const int k = b.linear(h, qkv, D, D, T, name + ".k");
    const int v = b.linear(h, qkv, 2 * D, D, T, name + ".v");
    Node store = b.heads(Op::KvStore, layer, n_head, D);
    store.in[0] = k;
    store.in[1] = v;
    g.add_node(store);
    Node attn = b.heads(Op::Attention, layer, n_head, D);
    attn.in[0] = q;
    int a = b.node(attn, D, T, name + ".attn");
    x = b.add(x, b.linear(a, p + "/self_attention/linear_1", 0, D, T, name + ".attn_out"), T, name + ".attn_res");

    h = b.layer_norm(x, p + "/attention/layer_norm", T, name + ".cross_norm");
    const int cq = b.linear(h, p + "/attention/linear_0", 0, D, T, name + ".cross_q");
    Node cross = b.heads(Op::CrossAttention, layer, n_head, D);
    cross.in[0] = cq;
    a = b.node(cross, D, T, name + ".cross");
    x = b.add(x, b.linear(a, p + "/attention/linear_2", 0, D, T, name + ".cross_out"), T, name + ".cross_res");

    x = b.add(x, b.mlp(x, p + "/ffn", T, name), T, name + ".ffn_res");
  }
  x = b.layer_norm(x, "decoder/layer_norm", T, "dec.out_norm");
  Node select{};
  select.op = Op::SelectRows;
  select.in[0] = x;
  x = b.node(select, D, RowSpace::Outputs, "dec.selected");
  Node logits{};
  logits.op = Op::MatMul;
  logits.in[0] = x;
  logits.weight = b.weight("decoder/projection/weight");  // an alias of the token embedding
  g.set_output(b.node(logits, spec.n_vocab, RowSpace::Outputs, "logits"));
  return g;
}

}  // namespace rayo::whisper
