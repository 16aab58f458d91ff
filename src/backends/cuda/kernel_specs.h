#pragma once
// Which kernel variants a graph needs and how each is launched: a variant is
// a kernel source file compiled with shape constants as -D macros (HEAD_DIM,
// COLS, WTYPE, ...) and one of its kernels, launched with a grid, block and
// dynamic shared memory that follow from the same shape, and one argument
// struct (kernels/kernel_args.cuh). One place decides all of it, used by the
// backend (what to compile and launch), by `rayo kernels --precompile`, by the
// kernel benchmark and by the tests (NVRTC compiles, the SIMT emulator's
// launches, the native ones), so that they all agree.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/cuda/activation_plan.h"
#include "graph/backend.h"
#include "graph/graph.h"

namespace rayo::cuda {

// A launch's geometry: blocks on each axis, threads per block, bytes of
// dynamic shared memory.
struct LaunchShape {
  unsigned grid[3] = {1, 1, 1};
  unsigned block = 0;
  unsigned shared = 0;
};

struct KernelSpec {
  std::string file;   // "gemv.cu"
  std::string entry;  // the kernel it launches ("gemv"); the file's others are specs of the same key
  std::vector<std::pair<std::string, std::string>> defines;  // in order
  // Compiled with --fmad=false: no a * b + c contracted into an FMA, so that
  // every variant of the matmul family (GEMV token tiles, the exact GEMM)
  // rounds its float sums as written, the same way.
  bool no_fma = false;
  // Bytes of dynamic shared memory its kernels are launched with (0: static
  // only). Not part of the key: it does not change the code.
  unsigned dynamic_shared = 0;
  // The grid is `grid` but on the token axis (if token_axis >= 0), which has
  // a block per token_tile token rows of the step; `block` threads each.
  unsigned grid[3] = {1, 1, 1};
  int token_axis = -1;
  int64_t token_tile = 1;
  unsigned block = 0;
  // Stable text naming the compiled code: "gemv.cu WTYPE=12 COLS=4096 ...".
  std::string key() const;
  // The value of integer macro `name` (fails if it has none).
  int64_t int_define(std::string_view name) const;
  // Its launch for a step of up to `token_rows` rows (the graph's bound: a
  // kernel's blocks past the step's *n_rows return at once).
  LaunchShape launch(int64_t token_rows) const;
};

// The kernels of a kernel file, in the order the file defines them.
const std::vector<std::string>& kernel_entries(const std::string& file);

// Token rows per GEMV block: decode graphs use 1, batches share each decoded
// weight group between this many rows: 4 in graphs of up to 8 rows, 8 in
// larger ones. Measured on an H100 (llama3-8b Q4_K_M, rayo bench -B): 16
// sequences 1 326 t/s with tiles of 4, 1 428 with tiles of 8; 8 sequences
// 1 216 with 4, 1 159 with 8. RAYO_GEMV_TOKEN_TILE=4|8 sets it for every
// batch, to time the tiles on a GPU.
int gemv_token_tile(int64_t max_rows);

// Graphs of at least this many token rows multiply quantized weights on
// tensor cores (gemm.cuh), smaller ones with the GEMVs. Measured on an H100
// (rayo bench --kernels --kernel-path both, llama3-8b shapes): at 16 and 24
// tokens the GEMVs take less time than the GEMMs on every Q6_K matrix and on
// the 4096-row Q4_K ones (attn_q 26 vs 53 us at 16), more only on Q4_K
// gate+up and output (1.2x at 16, 1.7x at 24); at 32 the sums of a layer are
// even. 16 sequences decoded together ran at 582 t/s on the GEMMs (before
// the f16 tile's rework, since then not measured).
constexpr int64_t kGemmMinTokens = 32;
// kGemmMinTokens, or RAYO_GEMM_MIN_TOKENS (8, 16, 24, 32 or 64), to time
// another crossover on a GPU.
int64_t gemm_min_tokens();
// The tensor-core GEMM tiles (gemm.cuh): f16 (weights decoded to f16, the
// tokens' twins converted), int8 (both as int8 lanes with float scales, each
// unit's sum combined and added in row order) and exact (int8 in the GEMVs'
// order: their bits, for batch-invariant graphs).
enum class GemmTile { F16, Int8, Exact };
// Whether the int8 GEMM multiplies weights of type t faster than the f16 one,
// so that graphs that are not batch-invariant use it: for no format now. On
// an H100 (2026-11-28, llama3-8b Q4_K_M pp512) the f16 tile for every format
// gave 6 080 t/s, Q6_K on the int8 tile (the choice before) 5 770, every
// format on it 4 896. RAYO_GEMM_TILE=int8 still runs it, to time it.
bool int8_gemm_is_faster(TensorType t);
// The GEMMs' tiles (gemm.cuh's GEMM_TOKENS, GEMM_ROWS; GEMM_THREADS threads):
// a GEMM's grid is (ceil(token rows / gemm_block_tokens), ceil(its rows / its
// tile rows)), where gemm.cu's tile rows are kGemmRows, gemm_swiglu.cu's
// kGemmRows / 2 of each matrix and gemm_qkv_rope_store.cu's kGemmRows / 2
// rotation pairs. A block of the f16 and int8 tiles multiplies two halves of
// kGemmTokens tokens by each decoded weight (gemm.cuh's kBlockTokens), the
// exact tile one. RAYO_GEMM_BLOCK_TOKENS=32 gives the f16 and int8 tiles'
// blocks one half (GEMM_BLOCK_TOKENS), to time the grid of steps of few tokens
// on narrow matrices on a GPU (64-token blocks halve it).
constexpr int64_t kGemmTokens = 32, kGemmRows = 64, kGemmThreads = 128;
int64_t gemm_block_tokens(GemmTile tile);
// The GEMMs' dynamic shared memory (gemm.cuh's GemmShared, f16 and exact:
// their tiles and the stages the asynchronous copies fill; the f16 one uses
// all of it). Every sm_80+ GPU allows it (at least 99 KB per block).
constexpr unsigned kGemmSharedBytes = 98304;
// Whether matmul node n of g runs as a tensor-core GEMM. In a batch-invariant
// graph only as the exact GEMM (gemm.cuh, GEMM_EXACT: the GEMV's bits), and
// only where its tiles can be exact (exact_gemm_fits); otherwise the GEMVs.
bool uses_gemm(const graph::Graph& g, const graph::Node& n);
// Whether matmul node n multiplies F16 weights as stored on tensor cores
// (gemm.cuh's gemm_tile_half_rows): a plain product (no fused norm) of rows
// of a multiple of 8 values.
bool multiplies_half_rows(const graph::Graph& g, const graph::Node& n);
// The tile a prompt's GEMM of type-t weights takes: RAYO_GEMM_TILE=f16|int8
// where set (to time the tiles side by side), else int8_gemm_is_faster's.
GemmTile prompt_gemm_tile(TensorType t);
// The tile of node n's GEMM: exact in batch-invariant graphs; int8 where every
// matrix it reads takes int8 (prompt_gemm_tile) and its tiles fit
// (exact_gemm_fits); f16 otherwise.
GemmTile gemm_tile_for(const graph::Graph& g, const graph::Node& n);
// Whether the int8 tiles (exact or not) can multiply node n: their tiles must
// not mix unit shapes (gate and up of one shape; q, k and v tiles of one
// matrix each, which head sizes that are multiples of 64 give).
bool exact_gemm_fits(const graph::Graph& g, const graph::Node& n);
// The tensor-core twin of a GEMV-family variant: the same macros, gemm.cu for
// gemv.cu, gemm_swiglu.cu for gemv_swiglu.cu, gemm_qkv_rope_store.cu for
// qkv_rope_store.cu; the int8 tile adds GEMM_EXACT=2, the exact one
// GEMM_EXACT=1 (in the GEMV's order, and like the GEMVs without FMA
// contraction); all ask for kGemmSharedBytes of dynamic shared memory.
KernelSpec tensor_core_variant(const KernelSpec& gemv_family, GemmTile tile = GemmTile::F16);

// gemm_dense.cu: y = W x for f16 W (rows x cols, cols a multiple of
// kDenseGemmK) and f16 tokens, in blocks of kDenseGemmRows rows x
// kDenseGemmTokens tokens of kDenseGemmThreads threads and
// kDenseGemmSharedBytes of dynamic shared memory (the kernel's macros):
// prompt graphs' matmuls where uses_dense_gemm (dense_gemm_choice.h; off by
// default), and `rayo bench --kernels --kernel-path dense`.
constexpr int64_t kDenseGemmRows = 128, kDenseGemmTokens = 128, kDenseGemmThreads = 256, kDenseGemmK = 32;
constexpr unsigned kDenseGemmSharedBytes = 65536;
// With glu, gate/up's product (rows: both matrices', interleaved by
// decode_f16_spec's glu_half) and its activation (with_activation), rows / 2
// outputs.
KernelSpec dense_gemm_spec(int64_t rows, int64_t cols, bool glu = false);
// decode_f16.cu: a quantized rows x cols matrix in its GPU layout to f16 rows,
// the f16 tile's values (unit_halves.cuh), striding over its units; with
// glu_half 0 (gate) or 1 (up), into gate/up's interleave.
KernelSpec decode_f16_spec(TensorType w, int64_t rows, int64_t cols, int glu_half = -1);
// dense_rows.cu: the dense GEMM's tokens (f16 rows; norm_eps >= 0: RMSNorm
// applied first).
KernelSpec rows_f16_spec(int64_t cols, float norm_eps);

// Positions per attention split (flash-decoding chunk). Decode graphs (up to 8
// tokens) use small chunks, so that a long context spreads over many blocks
// (at most 1024 splits); prompt graphs large ones, so that their partial
// results stay small (at most 64 splits per row); at most 8192 / gqa either
// way. Chunks grow with the context past that, so the splits, the grid and
// the partial results stay bounded at any context: a split scores 8192 / gqa
// positions at a time in shared memory (attention.cu's ATT_SUB).
int attention_chunk(int64_t max_seq_len, int64_t max_tokens, int gqa);
// Floats of one partial result of the attention kernel's splits (a row, a
// query head, a split): head_dim sums, their max and sum of exponentials,
// padded to a multiple of 4 so that the merge reads the sums 16 bytes a load.
int64_t attention_partial_floats(int head_dim);
// The merge of `splits` splits (a row's, a kv head's) goes by groups of this
// many (MERGE_GROUP, about the square root: each group's last split merges the
// group, the last group the groups), and takes attention_merge_counters
// counters per (row, kv head).
int attention_merge_group(int64_t splits);
int64_t attention_merge_counters(int64_t splits);

// The format weight w of matmul node n is multiplied in on the GPU: quantized
// weights as stored (in their GPU layout, weight_layout.h) when every matrix of
// the node is quantized (activation_plan.h: reads_q8); float weights as
// stored; a quantized weight in a node with float ones as F16 (dequantized
// once at load). Fails with one line for a type the backend cannot read.
TensorType matmul_weight_type(const graph::Graph& g, const graph::Node& n, int w);

// An exact float literal for a macro (hex float, "0x1.99999ap-4f").
std::string float_literal(float v);
// theta_scale of rope: base^(-2/n_rot) computed as the CPU backend does.
float rope_theta_scale(float freq_base, int n_rot);

// What a kernel's epilogue writes of its output's twin (activation_plan.h,
// kernels/q8_act.cuh): the q8 part (of the output times the consumer's norm
// weight when norm), the row statistics.
struct Emit {
  bool q8 = false, norm = false, ss = false;
};
Emit emit_of(const ActivationPlan& plan, int node);

// K slices of a gemv.cu or qkv_rope_store.cu GEMV (gemv.cuh): 2 (blocks of
// 16 warps, warps 2w and 2w + 1 sharing 4 rows) for a decode GEMV (a token a
// block) of quantized weights and at most 2048 rows, whose 64 blocks or fewer
// would otherwise run one block of 8 warps on half the SMs or fewer; else 1.
// At 4096 rows two slices lost: on an H100 (2026-11-28, llama3-8b Q4_K_M)
// decode ran at 384.1 t/s with one slice, 370.5 with two (two rounds each,
// interleaved). Narrower models (qwen2.5-1.5b: 1536 rows) are not yet
// measured both ways. The sums are the same bits either way.
// RAYO_GEMV_SLICES=1|2 sets it where it may be 2, to time both on a GPU.
int gemv_slices(TensorType w, int64_t rows, int tt);

// Kernel variants by op. `tt` is the token tile; norm_eps < 0 means no fused norm.
KernelSpec gemv_spec(TensorType w, int64_t cols, int64_t rows, int tt, float norm_eps, int epilogue, Emit emit = {},
                     int slices = 1);
KernelSpec gemv_swiglu_spec(TensorType gate, TensorType up, int64_t cols, int64_t rows, int tt, float norm_eps,
                            Emit emit = {});
struct QkvShape {
  TensorType q = TensorType::F32, k = TensorType::F32, v = TensorType::F32;
  int64_t cols = 0;
  int n_head = 0, n_head_kv = 0, head_dim = 0;
  graph::RopeParams rope;
  bool has_freq_factors = false;
  bool bias = false;
  float norm_eps = -1.0f;
  int64_t block_size = 16;  // positions per KV cache block
  int64_t rows() const { return static_cast<int64_t>(n_head + 2 * n_head_kv) * head_dim; }  // of q, k and v
};
KernelSpec qkv_rope_store_spec(const QkvShape& s, int tt, int slices = 1);
KernelSpec rope_spec(int n_head, int head_dim, const graph::RopeParams& rope, bool has_freq_factors);
KernelSpec kv_store_spec(int64_t kv_width, int64_t block_size);
// How an attention node scores: q·k times `scale` (0: 1/√head_dim) over the
// last `window` positions (0: all) — graph::Node's scale and window.
struct AttentionScores {
  float scale = 0.0f;
  int window = 0;
};
AttentionScores attention_scores(const graph::Node& n);
// The factor of an attention node's scores: its scale, or 1/√head_dim.
float scores_scale(const graph::Node& n);
// max_seq_len: the longest sequence; with chunk, the number of splits. With
// flash, the rows of one-sequence tiles are left to attention_prefill_spec's
// kernel, launched beside it.
KernelSpec attention_spec(int n_head, int n_head_kv, int head_dim, int64_t max_seq_len, int64_t block_size, int chunk,
                          Emit emit = {}, bool flash = false, AttentionScores scores = {});
// Prompt attention on tensor cores (attention_prefill.cu), in tiles of
// kFlashTokens rows of one sequence (common.cuh's FA_TOKENS).
constexpr int64_t kFlashTokens = 16;
KernelSpec attention_prefill_spec(int n_head, int n_head_kv, int head_dim, int64_t block_size, Emit emit = {},
                                  AttentionScores scores = {});
// Whether attention node n of g runs on tensor cores too: prompt graphs (at
// least kFlashTokens rows, not batch-invariant), head sizes that are multiples
// of 16 up to 128, at most 8 query heads per kv head.
bool uses_flash_attention(const graph::Graph& g, const graph::Node& n);
// The context chunk of attention node n of g (attention_chunk by the graph's
// size; a batch-invariant graph's is a decode step's, whatever its size).
int graph_attention_chunk(const graph::Graph& g, const graph::Node& n, int64_t max_seq_len);
KernelSpec rms_norm_spec(int64_t cols, int group, float eps);
// The attention kernels of encoder-decoder models (cross_attention.cu: entry
// dense_attention, dense_attention_tc (tensor cores: heads of a multiple of 16
// values up to 128), cross_kv_store or cross_attention) for heads of head_dim,
// rows attending over at most max_len keys (dense: the step's rows; cross:
// cross_len), a cross-attention memory of cross_len rows per slot.
KernelSpec encoder_decoder_attention_spec(const char* entry, int n_head, int head_dim, int64_t max_len,
                                          int64_t cross_len, float scale);
// The unfolding of a kernel-3 convolution's input (conv1d.cu) of `channels`
// channels, frame-major or (channel_major) [channels][frames].
KernelSpec conv1d_unfold_spec(int64_t channels, int stride, bool channel_major);
// LayerNorm with a bias (layernorm.cu).
KernelSpec layer_norm_spec(int64_t cols, float eps);
// Row-wise ops (entry: add, add_bias, swiglu, gelu, add_position, select_rows);
// select_rows writes the twin of its output (emit).
KernelSpec elementwise_spec(int64_t cols, Emit emit = {}, const char* entry = "add");
// A gate/up kernel (swiglu, gemv_swiglu, gemm_swiglu) with node n's activation:
// GELU-tanh adds GELU=1 to its shape.
KernelSpec with_activation(KernelSpec s, graph::Activation act);
// embed (writing the twin of its rows, each multiplied by `scale`: Gemma's
// √n_embd), or with entry "dequant_f16" a whole matrix (`rows` of them) to f16.
KernelSpec dequant_spec(TensorType w, int64_t cols, Emit emit = {}, const char* entry = "embed", float scale = 1.0f);
// The twin of f32 rows, for activations whose producer cannot write it.
KernelSpec quantize_spec(int64_t cols, Emit emit);

// The KV cache geometry the kernels are specialised to.
struct KvShape {
  int64_t max_seq_len = 4096;
  int64_t block_size = 16;
  // Sliding-window layers that keep a ring of ring_blocks blocks per sequence
  // (graph::KvCacheConfig): their store and attention kernels get RING_BLOCKS.
  int64_t ring_blocks = 0;
  std::vector<bool> ring_layers = {};
  // Rows of a cross-attention memory slot (encoder-decoder models; 0: none).
  int64_t cross_len = 0;

  bool in_ring(int layer) const {
    return ring_blocks > 0 && layer >= 0 && static_cast<size_t>(layer) < ring_layers.size() && ring_layers[layer];
  }
};
// The shape of a backend's KV cache config.
KvShape kv_shape(const graph::KvCacheConfig& config);

// The variants one node of a (fused) graph launches, given the graph's
// activation plan: its own kernels, after the quantize launches of the twins it
// reads that no producer writes.
std::vector<KernelSpec> node_kernel_specs(const graph::Graph& g, const graph::Node& n, const KvShape& kv,
                                          const ActivationPlan& plan);
// All variants a graph needs, without duplicates (also the dequant_f16 ones of
// quantized weights on the float path and the sampler of the logits).
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
