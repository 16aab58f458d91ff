#pragma once
// Which kernel variants a graph needs: each is a kernel source file compiled
// with shape constants as -D macros (HEAD_DIM, COLS, WTYPE, ...). One place
// decides the macros, used by the backend (what to compile and launch), by
// `rayo kernels --precompile` and by the NVRTC compile tests, so all three agree.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace rayo::cuda {

struct KernelSpec {
  std::string file;                 // "gemv.cu"
  std::vector<std::string> entries; // the kernels of the file the caller launches
  std::vector<std::pair<std::string, std::string>> defines;  // in order
  // Stable text naming the variant: "gemv.cu WTYPE=12 COLS=4096 ...".
  std::string key() const;
};

// Token rows per GEMV block: decode graphs use 1, batches share each decoded
// weight group between this many rows.
int gemv_token_tile(int64_t max_rows);

// Positions per attention split (flash-decoding chunk).
constexpr int kAttentionChunk = 256;

// The format a MatMul weight is multiplied in on the GPU: the native formats
// (F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K) as stored; the others (Q4_1,
// Q5_0, Q5_1, Q2_K, Q3_K) are dequantized to F16 once at load. Fails with one
// line for a type the backend cannot read.
TensorType gemv_weight_type(TensorType stored, const std::string& tensor_name);
bool is_native_gemv_type(TensorType type);

// An exact float literal for a macro (hex float, "0x1.99999ap-4f").
std::string float_literal(float v);
// theta_scale of rope: base^(-2/n_rot) computed as the CPU backend does.
float rope_theta_scale(float freq_base, int n_rot);

// Kernel variants by op. `tt` is the token tile; norm_eps < 0 means no fused norm.
KernelSpec gemv_spec(TensorType w, int64_t cols, int64_t rows, int tt, float norm_eps, int epilogue);
KernelSpec gemv_swiglu_spec(TensorType gate, TensorType up, int64_t cols, int64_t rows, int tt, float norm_eps);
struct QkvShape {
  TensorType q = TensorType::F32, k = TensorType::F32, v = TensorType::F32;
  int64_t cols = 0;
  int n_head = 0, n_head_kv = 0, head_dim = 0;
  graph::RopeParams rope;
  bool has_freq_factors = false;
  bool bias = false;
  float norm_eps = -1.0f;
  int64_t block_size = 16;  // positions per KV cache block
};
KernelSpec qkv_rope_store_spec(const QkvShape& s, int tt);
KernelSpec rope_spec(int n_head, int head_dim, const graph::RopeParams& rope, bool has_freq_factors);
KernelSpec kv_store_spec(int64_t kv_width, int64_t block_size);
// max_seq_len: the longest sequence (sets the number of splits).
KernelSpec attention_spec(int n_head, int n_head_kv, int head_dim, int64_t max_seq_len, int64_t block_size,
                          int chunk = kAttentionChunk);
KernelSpec rms_norm_spec(int64_t cols, int group, float eps);
KernelSpec elementwise_spec(int64_t cols);
KernelSpec dequant_spec(TensorType w, int64_t cols);

// The KV cache geometry the kernels are specialised to.
struct KvShape {
  int64_t max_seq_len = 4096;
  int64_t block_size = 16;
};

// The variants one node of a (fused) graph launches.
std::vector<KernelSpec> node_kernel_specs(const graph::Graph& g, const graph::Node& n, const KvShape& kv);
// All variants a graph needs, without duplicates (also the dequant_f16 ones of
// fallback-format weights and the argmax of the logits).
std::vector<KernelSpec> graph_kernel_specs(const graph::Graph& g, const KvShape& kv);

// The fused decode graph's variants for a model given only by its shapes (the
// compile tests use it for llama3-8b and qwen2.5-1.5b without their files).
struct DecoderShape {
  int64_t n_embd = 0, n_ff = 0, n_vocab = 0, n_ctx = 4096, block_size = 16;
  int n_head = 0, n_head_kv = 0, head_dim = 0;
  float rope_base = 10000.0f, eps = 1e-5f;
  bool neox = false, qkv_bias = false;
  TensorType attn = TensorType::Q4_K, attn_v = TensorType::Q6_K, ffn = TensorType::Q4_K,
             ffn_down = TensorType::Q6_K, embd = TensorType::Q4_K, output = TensorType::Q6_K;
};
std::vector<KernelSpec> decoder_kernel_specs(const DecoderShape& s);

}  // namespace rayo::cuda
