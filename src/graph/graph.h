#pragma once
// A compute graph: the ops of one model step, built once per architecture and
// batch size and replayed every step. Only buffer contents and the step's inputs
// (token ids, positions, which rows need logits) change between steps, so a
// backend can prepare everything — weights, buffers, a CUDA graph — once.
//
// Every activation is a 2-D row-major f32 matrix: one row per token of the step
// (or per output row after SelectRows) and a fixed number of columns. Heads are
// column ranges of a row (head h of q is columns [h*head_dim, (h+1)*head_dim)).
#include <cstdint>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "quant/tensor_type.h"

namespace rayo::graph {

// A model weight as stored in the file: `rows` vectors of `cols` values in `type`.
// For a MatMul weight, rows = output features and cols = input features.
struct Weight {
  std::string name;
  TensorType type = TensorType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  const void* data = nullptr;  // into the mapped model file
  // data is in a file mapping: a backend that keeps its own copy may let the
  // kernel drop these pages (they read back from the file). False for a model
  // held in memory, whose dropped pages would read back as zeros.
  bool file_backed = false;
};

enum class RowSpace {
  Tokens,   // one row per token of the step (n_tokens <= max_tokens)
  Outputs,  // one row per requested output (after SelectRows)
  Frames,   // one row per frame of the step's features (an encoder's input, before it is strided)
};

struct Value {
  int64_t cols = 0;
  RowSpace rows = RowSpace::Tokens;
  std::string name;     // for --verbose and debugging: "blk.3.q", ...
  size_t offset = 0;    // byte offset in the step arena, set by the memory planner
};

enum class RopeType { Normal, NeoX };  // adjacent pairs (Llama) / halves (GPT-NeoX, Qwen)

struct RopeParams {
  RopeType type = RopeType::Normal;
  int n_rot = 0;             // leading dims of each head that rotate (= head_dim usually)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;   // linear scaling: positions are multiplied by this
  int freq_factors = -1;     // optional weight of n_rot/2 divisors (Llama 3.1 rope_freqs)
};

// The gate's activation of a gated feed-forward network (Glu, GateUpGlu).
enum class Activation {
  Silu,      // x / (1 + e^-x): SwiGLU (Llama, Qwen)
  GeluTanh,  // x / 2 · (1 + tanh(√(2/π) (x + 0.044715 x³))): GeGLU (Gemma)
};

struct Node {
  Op op;
  int out = -1;                  // value index, -1 for KvStore
  int in[3] = {-1, -1, -1};      // value indices
  int weight = -1;               // index into Graph::weights (MatMul, Embed, RmsNorm, AddBias)
  int layer = -1;                // KvStore, Attention: which layer's cache
  float eps = 0.0f;              // RmsNorm
  int group = 0;                 // RmsNorm: values per normalised group
  int n_head = 0, n_head_kv = 0, head_dim = 0;  // Rope, KvStore, Attention
  RopeParams rope;               // Rope
  // Embed: the rows are multiplied by it (Gemma: √n_embd). Attention: q·k is
  // multiplied by it before the softmax. 0: the op's default (1; 1/√head_dim).
  float scale = 0.0f;
  // Attention: a query at position p sees positions p - window + 1 .. p (0:
  // all of 0 .. p): sliding-window layers.
  int window = 0;
  Activation act = Activation::Silu;  // Glu, GateUpGlu
  int stride = 1;                // Unfold
  int aux[6] = {-1, -1, -1, -1, -1, -1};  // fused ops: more weight indices (ops.h)
};

struct GraphConfig {
  int64_t max_tokens = 1;     // rows of a step (batch bucket)
  int64_t max_outputs = 1;    // rows of Outputs values (rows that get logits)
  // Every row's arithmetic the same whatever the step's size and other rows, so
  // that a sequence's tokens do not depend on what it is batched with. A
  // backend may otherwise pick faster kernels by the step's size (the CUDA
  // backend: tensor cores for steps of 32 tokens or more); the CPU's rows are
  // independent either way.
  bool batch_invariant = false;
  int64_t max_frames = 0;     // rows of Frames values (an encoder's input frames)
};

// The weights node n multiplies its input by: MatMul's, and those of the fused
// ops built on it (ops.h), in the fused op's order (q, k, v; gate, up).
std::vector<int> matrix_weights(const Node& n);
// The weights node n reads as vectors of floats: norm weights, biases, rope
// frequency factors.
std::vector<int> vector_weights(const Node& n);

class Graph {
 public:
  explicit Graph(GraphConfig config) : config_(config) {}

  const GraphConfig& config() const { return config_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<Node>& mutable_nodes() { return nodes_; }
  const std::vector<Value>& values() const { return values_; }
  std::vector<Value>& mutable_values() { return values_; }
  const std::vector<Weight>& weights() const { return weights_; }
  int output() const { return output_; }      // the logits value
  size_t arena_bytes() const { return arena_bytes_; }

  // Building.
  int add_weight(const Weight& w);
  int add_value(int64_t cols, RowSpace rows, std::string name);
  int add_node(const Node& node);
  void set_output(int value) { output_ = value; }
  void set_arena_bytes(size_t bytes) { arena_bytes_ = bytes; }

  // Rows a value has at most (max_tokens or max_outputs).
  int64_t max_rows(const Value& v) const;
  size_t value_bytes(const Value& v) const { return static_cast<size_t>(max_rows(v) * v.cols) * sizeof(float); }

  // Ops per step, value sizes, buffer plan: what `--verbose` prints.
  std::string describe() const;

 private:
  GraphConfig config_;
  std::vector<Node> nodes_;
  std::vector<Value> values_;
  std::vector<Weight> weights_;
  int output_ = -1;
  size_t arena_bytes_ = 0;
};

}  // namespace rayo::graph
