#include "backends/cuda/kernel_specs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "backends/cuda/dense_gemm_choice.h"
#include "backends/cuda/device_sampling.h"
#include "backends/cuda/weight_layout.h"
#include "common/error.h"
#include "common/strings.h"

namespace rayo::cuda {

using graph::Node;
using graph::Op;

int64_t KernelSpec::int_define(std::string_view name) const {
  for (const auto& [n, v] : defines)
    if (n == name) return std::stoll(v);
  fail(file, " has no macro ", name);
}

std::string KernelSpec::key() const {
  std::string k = file;
  for (const auto& [name, value] : defines) k += cat(" ", name, "=", value);
  if (no_fma) k += " --fmad=false";
  return k;
}

LaunchShape KernelSpec::launch(int64_t token_rows) const {
  RAYO_CHECK(block > 0, file, ": a spec without a launch shape");
  LaunchShape l;
  for (int i = 0; i < 3; ++i) l.grid[i] = grid[i];
  if (token_axis >= 0)
    l.grid[token_axis] = static_cast<unsigned>((std::max<int64_t>(token_rows, 1) + token_tile - 1) / token_tile);
  l.block = block;
  l.shared = dynamic_shared;
  return l;
}

const std::vector<std::string>& kernel_entries(const std::string& file) {
  static const std::map<std::string, std::vector<std::string>> entries = {
      {"attention.cu", {"attention"}},
      {"attention_prefill.cu", {"attention_prefill"}},
      {"conv1d.cu", {"conv1d_unfold"}},
      {"cross_attention.cu", {"dense_attention", "cross_kv_store", "cross_attention", "dense_attention_tc"}},
      {"decode_f16.cu", {"decode_f16"}},
      {"dense_rows.cu", {"rows_f16"}},
      {"dequant.cu", {"embed", "dequant_f16"}},
      {"elementwise.cu", {"add", "add_bias", "swiglu", "gelu", "add_position", "select_rows"}},
      {"gemm.cu", {"gemm"}},
      {"gemm_dense.cu", {"gemm_dense"}},
      {"gemm_qkv_rope_store.cu", {"gemm_qkv_rope_store", "rope_store_rows"}},
      {"gemm_swiglu.cu", {"gemm_swiglu"}},
      {"gemv.cu", {"gemv"}},
      {"gemv_swiglu.cu", {"gemv_swiglu"}},
      {"kv_store.cu", {"kv_store"}},
      {"layernorm.cu", {"layer_norm"}},
      {"qkv_rope_store.cu", {"qkv_rope_store"}},
      {"quantize.cu", {"quantize_rows"}},
      {"rmsnorm.cu", {"rms_norm"}},
      {"rope.cu", {"rope"}},
      {"sample.cu", {"sample"}},
  };
  const auto it = entries.find(file);
  if (it == entries.end()) fail("no kernel file ", file);
  return it->second;
}

namespace {
unsigned blocks_for(int64_t n, int64_t per_block) { return static_cast<unsigned>((n + per_block - 1) / per_block); }

// The spec's launch: fixed blocks on the axes but the token axis, threads.
void set_launch(KernelSpec& s, std::initializer_list<unsigned> grid, int token_axis, int64_t token_tile,
                unsigned block) {
  int i = 0;
  for (unsigned g : grid) s.grid[i++] = g;
  s.token_axis = token_axis;
  s.token_tile = token_tile;
  s.block = block;
}

// Rows of the GEMV family's outputs: a matrix's rows, or q/k/v rotation pairs.
int64_t qkv_pairs(const KernelSpec& s) {
  return (s.int_define("N_HEAD") + 2 * s.int_define("N_HEAD_KV")) * s.int_define("HEAD_DIM") / 2;
}
// The GEMVs' blocks: 8 warps of 4 rows (gemv.cuh's GEMV_ROWS), or of 2 q/k/v pairs.
constexpr int64_t kGemvRows = 32, kGemvPairs = 16;
constexpr unsigned kGemvThreads = 256;

// A GEMV's grid (gemv.cuh): (token tiles, row blocks), the token tiles on the
// fast axis; with one-token tiles (decode) (row blocks, 1). Blocks of
// kGemvThreads per K slice.
void set_gemv_launch(KernelSpec& s, unsigned row_blocks, int tt, int slices = 1) {
  const unsigned threads = kGemvThreads * static_cast<unsigned>(slices);
  if (tt == 1)
    set_launch(s, {row_blocks}, 1, tt, threads);
  else
    set_launch(s, {1, row_blocks}, 0, tt, threads);
}
}  // namespace

// The value of environment variable `name`, one of `allowed`, for timing
// one kernel choice against another on a GPU; 0 when unset.
static int64_t timing_choice(const char* name, std::initializer_list<int64_t> allowed) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return 0;
  std::string list;
  for (int64_t a : allowed) {
    if (std::to_string(a) == env) return a;
    list += (list.empty() ? "" : ", ") + std::to_string(a);
  }
  fail(name, "=", quote_for_message(env), " is not one of ", list);
}

int gemv_token_tile(int64_t max_rows) {
  static const int64_t forced = timing_choice("RAYO_GEMV_TOKEN_TILE", {4, 8});
  if (max_rows <= 1) return 1;
  if (forced != 0) return static_cast<int>(forced);
  return max_rows > 8 ? 8 : 4;
}

int64_t gemm_min_tokens() {
  static const int64_t forced = timing_choice("RAYO_GEMM_MIN_TOKENS", {8, 16, 24, 32, 64});
  return forced != 0 ? forced : kGemmMinTokens;
}

static bool is_float_type(TensorType t) { return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16; }

int gemv_slices(TensorType w, int64_t rows, int tt) {
  if (tt != 1 || is_float_type(w)) return 1;
  static const int64_t forced = timing_choice("RAYO_GEMV_SLICES", {1, 2});
  if (forced != 0) return static_cast<int>(forced);
  // 64 blocks or fewer: at most half a wave on an H100 or H200 (132 SMs).
  return rows <= 64 * kGemvRows ? 2 : 1;
}

// The shape of a quantized format's units as the GEMVs read them
// (weight_formats.cuh): formats of one shape read the same activations.
static int unit_shape(TensorType t) {
  switch (t) {
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::IQ4_XS: return 1;
    case TensorType::Q6_K: return 2;
    case TensorType::Q2_K:
    case TensorType::Q3_K: return 3;
    default: return 0;  // the 32-value formats: one block
  }
}

bool exact_gemm_fits(const graph::Graph& g, const Node& n) {
  if (!reads_q8(g, n)) return false;
  const auto& w = g.weights();
  if (n.op == Op::GateUpGlu) return unit_shape(w[n.weight].type) == unit_shape(w[n.aux[1]].type);
  if (n.op == Op::QkvRopeStore) return n.head_dim % 64 == 0;
  return true;
}

bool int8_gemm_is_faster(TensorType) { return false; }

// RAYO_GEMM_TILE=f16|int8 sets the prompt GEMMs' tile for every format (int8
// only where it fits), for timing one against the other on a GPU; unset, the
// choice is int8_gemm_is_faster's.
static std::optional<GemmTile> forced_gemm_tile() {
  static const std::optional<GemmTile> forced = []() -> std::optional<GemmTile> {
    const char* env = std::getenv("RAYO_GEMM_TILE");
    if (env == nullptr || *env == '\0') return std::nullopt;
    const std::string_view s(env);
    if (s == "f16") return GemmTile::F16;
    if (s == "int8") return GemmTile::Int8;
    fail("RAYO_GEMM_TILE=", quote_for_message(s), " is not one of f16, int8");
  }();
  return forced;
}

GemmTile prompt_gemm_tile(TensorType t) {
  if (const auto forced = forced_gemm_tile()) return *forced;
  return int8_gemm_is_faster(t) ? GemmTile::Int8 : GemmTile::F16;
}

GemmTile gemm_tile_for(const graph::Graph& g, const Node& n) {
  if (g.config().batch_invariant) return GemmTile::Exact;
  for (int w : graph::matrix_weights(n))
    if (prompt_gemm_tile(g.weights()[w].type) != GemmTile::Int8) return GemmTile::F16;
  return exact_gemm_fits(g, n) ? GemmTile::Int8 : GemmTile::F16;
}

bool multiplies_half_rows(const graph::Graph& g, const Node& n) {
  if (n.op != Op::MatMul && n.op != Op::MatMulAdd) return false;
  const auto& w = g.weights()[n.weight];
  return w.type == TensorType::F16 && w.cols % 8 == 0;
}

bool uses_gemm(const graph::Graph& g, const Node& n) {
  if (n.in[0] < 0 || g.max_rows(g.values()[n.in[0]]) < gemm_min_tokens()) return false;
  // F16 rows have no exact GEMM: batch-invariant graphs keep the GEMVs.
  if (multiplies_half_rows(g, n)) return !g.config().batch_invariant;
  if (!reads_q8(g, n)) return false;
  return !g.config().batch_invariant || exact_gemm_fits(g, n);
}

KernelSpec tensor_core_variant(const KernelSpec& s, GemmTile tile) {
  KernelSpec t = s;
  std::erase_if(t.defines, [](const auto& d) { return d.first == "GEMV_SLICES"; });  // the GEMV's own
  if (tile != GemmTile::F16) t.defines.push_back({"GEMM_EXACT", tile == GemmTile::Exact ? "1" : "2"});
  t.no_fma = tile == GemmTile::Exact;  // the other tiles' sums differ from the GEMV's anyway: let them fuse
  t.dynamic_shared = kGemmSharedBytes;
  // Grid: (token tiles, row tiles); gate/up's and q/k/v's tiles hold half as
  // many of their rows (a gate row and an up row; a pair of rotated rows).
  unsigned row_tiles = 0;
  if (s.file == "gemv.cu")
    t.file = "gemm.cu", row_tiles = blocks_for(s.int_define("ROWS"), kGemmRows);
  else if (s.file == "gemv_swiglu.cu")
    t.file = "gemm_swiglu.cu", row_tiles = blocks_for(s.int_define("ROWS"), kGemmRows / 2);
  else if (s.file == "qkv_rope_store.cu")
    t.file = "gemm_qkv_rope_store.cu", row_tiles = blocks_for(qkv_pairs(s), kGemmRows / 2);
  else
    fail("no tensor-core variant of ", s.file);
  t.entry = kernel_entries(t.file).front();
  if (gemm_block_tokens(tile) != 2 * kGemmTokens && tile != GemmTile::Exact)
    t.defines.push_back({"GEMM_BLOCK_TOKENS", std::to_string(gemm_block_tokens(tile))});
  set_launch(t, {1, row_tiles}, 0, gemm_block_tokens(tile), kGemmThreads);
  return t;
}

int64_t gemm_block_tokens(GemmTile tile) {
  static const int64_t forced = timing_choice("RAYO_GEMM_BLOCK_TOKENS", {kGemmTokens, 2 * kGemmTokens});
  if (tile == GemmTile::Exact) return kGemmTokens;
  return forced != 0 ? forced : 2 * kGemmTokens;
}

TensorType matmul_weight_type(const graph::Graph& g, const Node& n, int w) {
  const auto& weight = g.weights()[w];
  if (is_float_type(weight.type)) return weight.type;
  if (!has_gpu_layout(weight.type))
    fail("tensor '", weight.name, "' has type ", type_name(weight.type), ", which the CUDA backend cannot multiply");
  return reads_q8(g, n) ? weight.type : TensorType::F16;
}

Emit emit_of(const ActivationPlan& plan, int node) {
  const int t = plan.emits[static_cast<size_t>(node)];
  if (t < 0) return {};
  const Twin& tw = plan.twins[static_cast<size_t>(t)];
  return Emit{tw.q8, tw.q8 && tw.norm_weight >= 0, tw.ss};
}

static bool decodable(TensorType t) { return is_float_type(t) || has_gpu_layout(t); }

std::string float_literal(float v) {
  if (std::isinf(v)) return v > 0 ? "(1.0f/0.0f)" : "(-1.0f/0.0f)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%af", static_cast<double>(v));
  return buf;
}

float rope_theta_scale(float freq_base, int n_rot) { return std::pow(freq_base, -2.0f / static_cast<float>(n_rot)); }

namespace {
std::string num(int64_t v) { return std::to_string(v); }
std::string type_id(TensorType t) { return std::to_string(static_cast<uint32_t>(t)); }
void add_emit(KernelSpec& s, Emit e) {
  s.defines.push_back({"EMIT_Q8", e.q8 ? "1" : "0"});
  s.defines.push_back({"EMIT_NORM", e.norm ? "1" : "0"});
  s.defines.push_back({"EMIT_SS", e.ss ? "1" : "0"});
}
}  // namespace

KernelSpec gemv_spec(TensorType w, int64_t cols, int64_t rows, int tt, float norm_eps, int epilogue, Emit emit,
                     int slices) {
  KernelSpec s{"gemv.cu", {"gemv"}, {}};
  s.defines = {{"WTYPE", type_id(w)}, {"COLS", num(cols)}, {"ROWS", num(rows)}, {"TT", num(tt)},
               {"NORM", norm_eps >= 0 ? "1" : "0"}, {"EPS", float_literal(norm_eps >= 0 ? norm_eps : 0.0f)},
               {"EPI", num(epilogue)}};
  add_emit(s, emit);
  if (slices > 1) s.defines.push_back({"GEMV_SLICES", num(slices)});
  s.no_fma = true;
  set_gemv_launch(s, blocks_for(rows, kGemvRows), tt, slices);
  return s;
}

KernelSpec gemv_swiglu_spec(TensorType gate, TensorType up, int64_t cols, int64_t rows, int tt, float norm_eps,
                            Emit emit) {
  RAYO_CHECK(!emit.norm, "gate/up's output feeds no norm");
  KernelSpec s{"gemv_swiglu.cu", {"gemv_swiglu"}, {}};
  s.defines = {{"WTYPE", type_id(gate)}, {"WTYPE2", type_id(up)}, {"COLS", num(cols)}, {"ROWS", num(rows)},
               {"TT", num(tt)}, {"NORM", norm_eps >= 0 ? "1" : "0"},
               {"EPS", float_literal(norm_eps >= 0 ? norm_eps : 0.0f)}, {"EMIT_Q8", emit.q8 ? "1" : "0"},
               {"EMIT_SS", emit.ss ? "1" : "0"}};
  s.no_fma = true;
  set_gemv_launch(s, blocks_for(rows, kGemvRows), tt);
  return s;
}

static std::vector<std::pair<std::string, std::string>> rope_defines(const graph::RopeParams& r, bool ff) {
  return {{"N_ROT", num(r.n_rot)},
          {"ROPE_NEOX", r.type == graph::RopeType::NeoX ? "1" : "0"},
          {"THETA_SCALE", float_literal(rope_theta_scale(r.freq_base, r.n_rot))},
          {"FREQ_SCALE", float_literal(r.freq_scale)},
          {"HAS_FF", ff ? "1" : "0"}};
}

KernelSpec qkv_rope_store_spec(const QkvShape& q, int tt, int slices) {
  KernelSpec s{"qkv_rope_store.cu", {"qkv_rope_store"}, {}};
  s.defines = {{"QTYPE", type_id(q.q)}, {"KTYPE", type_id(q.k)}, {"VTYPE", type_id(q.v)}, {"COLS", num(q.cols)},
               {"N_HEAD", num(q.n_head)}, {"N_HEAD_KV", num(q.n_head_kv)}, {"HEAD_DIM", num(q.head_dim)}};
  for (auto& d : rope_defines(q.rope, q.has_freq_factors)) s.defines.push_back(d);
  s.defines.push_back({"QKV_BIAS", q.bias ? "1" : "0"});
  s.defines.push_back({"NORM", q.norm_eps >= 0 ? "1" : "0"});
  s.defines.push_back({"EPS", float_literal(q.norm_eps >= 0 ? q.norm_eps : 0.0f)});
  s.defines.push_back({"TT", num(tt)});
  s.defines.push_back({"BLOCK_SIZE", num(q.block_size)});
  if (slices > 1) s.defines.push_back({"GEMV_SLICES", num(slices)});
  s.no_fma = true;
  set_gemv_launch(s, blocks_for(qkv_pairs(s), kGemvPairs), tt, slices);
  return s;
}

KernelSpec rope_spec(int n_head, int head_dim, const graph::RopeParams& rope, bool has_freq_factors) {
  KernelSpec s{"rope.cu", {"rope"}, {{"N_HEAD", num(n_head)}, {"HEAD_DIM", num(head_dim)}}};
  for (auto& d : rope_defines(rope, has_freq_factors)) s.defines.push_back(d);
  set_launch(s, {}, 0, 1, 128);
  return s;
}

KernelSpec kv_store_spec(int64_t kv_width, int64_t block_size) {
  KernelSpec s{"kv_store.cu", {"kv_store"}, {{"KV_WIDTH", num(kv_width)}, {"BLOCK_SIZE", num(block_size)}}};
  set_launch(s, {}, 0, 1, 128);
  return s;
}

int attention_chunk(int64_t max_seq_len, int64_t max_tokens, int gqa) {
  auto pow2_at_least = [](int64_t v) {
    int64_t p = 1;
    while (p < v) p *= 2;
    return p;
  };
  // At most 8192 / gqa splits: the merge reads about sqrt(splits) partials per
  // block in two rounds (attention.cu).
  const int64_t splits = std::min<int64_t>(max_tokens <= 8 ? 1024 : 64, 8192 / std::max(gqa, 1));
  const int64_t floor = max_tokens <= 8 ? 64 : 256;
  return static_cast<int>(std::max(floor, pow2_at_least((max_seq_len + splits - 1) / splits)));
}

int64_t attention_partial_floats(int head_dim) { return (head_dim + 2 + 3) / 4 * 4; }

int attention_merge_group(int64_t splits) {
  // About sqrt(splits), so that the groups' merges and the last one read about
  // as many partials each: 1024 splits merge as 32 groups of 32.
  int group = 8;
  while (group < 64 && static_cast<int64_t>(group) * group < splits) group *= 2;
  return group;
}

int64_t attention_merge_counters(int64_t splits) {
  const int group = attention_merge_group(splits);
  return 1 + (splits + group - 1) / group;
}

AttentionScores attention_scores(const Node& n) { return {n.scale, n.window}; }

float scores_scale(const Node& n) {
  return n.scale != 0.0f ? n.scale : 1.0f / std::sqrt(static_cast<float>(n.head_dim));
}

namespace {
// The scores' factor as the kernels take it (SCALE, the `at`-th shape macro),
// and the window when there is one.
void add_scores(KernelSpec& s, size_t at, int head_dim, AttentionScores scores) {
  const float scale = scores.scale != 0.0f ? scores.scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
  s.defines.insert(s.defines.begin() + static_cast<std::ptrdiff_t>(at), {"SCALE", float_literal(scale)});
  if (scores.window > 0) s.defines.push_back({"WINDOW", num(scores.window)});
}
}  // namespace

KernelSpec attention_spec(int n_head, int n_head_kv, int head_dim, int64_t n_ctx, int64_t block_size, int chunk,
                          Emit emit, bool flash, AttentionScores scores) {
  RAYO_CHECK(head_dim > 0 && head_dim <= 256 && head_dim % 2 == 0, "head_dim ", head_dim,
             ": the attention kernel takes even head sizes up to 256");
  RAYO_CHECK(n_head_kv > 0 && n_head % n_head_kv == 0, "bad GQA ratio");
  const int64_t splits = (n_ctx + chunk - 1) / chunk;
  // Grid: (kv heads, splits, token rows).
  KernelSpec s{"attention.cu",
                    {"attention"},
                    {{"HEAD_DIM", num(head_dim)},
                     {"N_HEAD", num(n_head)},
                     {"N_HEAD_KV", num(n_head_kv)},
                     {"CHUNK", num(chunk)},
                     {"N_SPLITS", num(splits)},
                     {"BLOCK_SIZE", num(block_size)},
                     {"EMIT_Q8", emit.q8 ? "1" : "0"},
                     {"FLASH", flash ? "1" : "0"},
                     {"MERGE_GROUP", num(attention_merge_group(splits))}}};
  add_scores(s, 5, head_dim, scores);
  set_launch(s, {static_cast<unsigned>(n_head_kv), static_cast<unsigned>(splits)}, 2, 1, 128);
  return s;
}

static bool has_flash_kernel(int n_head, int n_head_kv, int head_dim) {
  return head_dim % 16 == 0 && head_dim <= 128 && n_head_kv > 0 && n_head % n_head_kv == 0 && n_head / n_head_kv <= 8;
}

bool uses_flash_attention(const graph::Graph& g, const Node& n) {
  return !g.config().batch_invariant && g.config().max_tokens >= kFlashTokens &&
         has_flash_kernel(n.n_head, n.n_head_kv, n.head_dim);
}

int graph_attention_chunk(const graph::Graph& g, const Node& n, int64_t max_seq_len) {
  // Batch-invariant graphs split every row's context as a decode step does.
  return attention_chunk(max_seq_len, g.config().batch_invariant ? 1 : g.config().max_tokens, n.n_head / n.n_head_kv);
}

KernelSpec attention_prefill_spec(int n_head, int n_head_kv, int head_dim, int64_t block_size, Emit emit,
                                  AttentionScores scores) {
  RAYO_CHECK(has_flash_kernel(n_head, n_head_kv, head_dim), "attention of ", n_head, "/", n_head_kv, " heads of ",
             head_dim, " has no tensor-core kernel");
  // Grid: (kv heads, tiles of kFlashTokens rows); a warp per query head of the group.
  KernelSpec s{"attention_prefill.cu",
                    {"attention_prefill"},
                    {{"HEAD_DIM", num(head_dim)},
                     {"N_HEAD", num(n_head)},
                     {"N_HEAD_KV", num(n_head_kv)},
                     {"BLOCK_SIZE", num(block_size)},
                     {"EMIT_Q8", emit.q8 ? "1" : "0"}}};
  add_scores(s, 3, head_dim, scores);
  set_launch(s, {static_cast<unsigned>(n_head_kv)}, 1, kFlashTokens, static_cast<unsigned>(32 * (n_head / n_head_kv)));
  return s;
}

KernelSpec rms_norm_spec(int64_t cols, int group, float eps) {
  KernelSpec s{"rmsnorm.cu", {"rms_norm"}, {{"COLS", num(cols)}, {"GROUP", num(group)}, {"EPS", float_literal(eps)}}};
  set_launch(s, {}, 0, 1, 256);
  return s;
}

KernelSpec encoder_decoder_attention_spec(const char* entry, int n_head, int head_dim, int64_t max_len,
                                          int64_t cross_len, float scale) {
  // The scores of a row sit in static shared memory (48 KB in all).
  RAYO_CHECK(max_len > 0 && max_len <= 8192 && cross_len >= 0, "attention over ", max_len, " rows");
  KernelSpec s{"cross_attention.cu",
               entry,
               {{"HEAD_DIM", num(head_dim)},
                {"N_HEAD", num(n_head)},
                {"MAX_LEN", num(max_len)},
                {"CROSS_LEN", num(cross_len)},
                {"SCALE", float_literal(scale)}}};
  if (std::string_view(entry) == "cross_kv_store")
    set_launch(s, {}, 0, 1, 128);
  else if (std::string_view(entry) == "dense_attention_tc")  // 64-row tiles (XT_ROWS), 4 warps
    set_launch(s, {1, static_cast<unsigned>(n_head)}, 0, 64, 128);
  else
    set_launch(s, {1, static_cast<unsigned>(n_head)}, 0, 1, 128);
  return s;
}

KernelSpec conv1d_unfold_spec(int64_t channels, int stride, bool channel_major) {
  KernelSpec s{"conv1d.cu",
               {"conv1d_unfold"},
               {{"CHANNELS", num(channels)}, {"STRIDE", num(stride)}, {"CHANNEL_MAJOR", channel_major ? "1" : "0"}}};
  set_launch(s, {}, 0, 1, 256);
  return s;
}

KernelSpec layer_norm_spec(int64_t cols, float eps) {
  KernelSpec s{"layernorm.cu", {"layer_norm"}, {{"COLS", num(cols)}, {"EPS", float_literal(eps)}}};
  set_launch(s, {}, 0, 1, 256);
  return s;
}

KernelSpec elementwise_spec(int64_t cols, Emit emit, const char* entry) {
  KernelSpec s{"elementwise.cu", entry, {{"COLS", num(cols)}}};
  add_emit(s, emit);
  set_launch(s, {}, 0, 1, 256);
  return s;
}

KernelSpec with_activation(KernelSpec s, graph::Activation act) {
  if (act == graph::Activation::GeluTanh) s.defines.push_back({"GELU", "1"});
  return s;
}

KernelSpec dequant_spec(TensorType w, int64_t cols, Emit emit, const char* entry, float scale) {
  KernelSpec s{"dequant.cu", entry, {{"WTYPE", type_id(w)}, {"COLS", num(cols)}}};
  add_emit(s, emit);
  if (scale != 1.0f && scale != 0.0f) s.defines.push_back({"EMBED_SCALE", float_literal(scale)});
  // embed: a block per token row; dequant_f16: 1024 blocks striding over the matrix.
  if (s.entry == "dequant_f16")
    set_launch(s, {1024}, -1, 1, 128);
  else
    set_launch(s, {}, 0, 1, 128);
  return s;
}

KernelSpec dense_gemm_spec(int64_t rows, int64_t cols, bool glu) {
  RAYO_CHECK(cols % kDenseGemmK == 0, "a dense GEMM's K must be a multiple of ", kDenseGemmK, ", got ", cols);
  KernelSpec s{"gemm_dense.cu", "gemm_dense", {{"ROWS", num(rows)}, {"COLS", num(cols)}}};
  if (glu) {
    RAYO_CHECK(rows % 16 == 0, "gate/up's interleave takes rows in groups of 8 of each, not ", rows);
    s.defines.push_back({"GLU", "1"});
  }
  s.dynamic_shared = kDenseGemmSharedBytes;
  set_launch(s, {1, blocks_for(rows, kDenseGemmRows)}, 0, kDenseGemmTokens, kDenseGemmThreads);
  return s;
}

KernelSpec decode_f16_spec(TensorType w, int64_t rows, int64_t cols, int glu_half) {
  KernelSpec s{"decode_f16.cu", "decode_f16", {{"WTYPE", type_id(w)}, {"ROWS", num(rows)}, {"COLS", num(cols)}}};
  if (glu_half >= 0) {
    RAYO_CHECK(rows % 8 == 0, "gate/up's interleave takes rows in groups of 8, not ", rows);
    s.defines.push_back({"GLU_HALF", num(glu_half)});
  }
  // A thread a unit (32 or 64 values), striding: about 4 units a thread at llama3-8b's largest matrices.
  const int64_t blocks = std::clamp<int64_t>(rows * cols / (64 * 256), 1, 2048);
  set_launch(s, {static_cast<unsigned>(blocks)}, -1, 1, 256);
  return s;
}

KernelSpec rows_f16_spec(int64_t cols, float norm_eps) {
  KernelSpec s{"dense_rows.cu", "rows_f16", {{"COLS", num(cols)}}};
  if (norm_eps >= 0) s.defines.push_back({"NORM", "1"}), s.defines.push_back({"EPS", float_literal(norm_eps)});
  set_launch(s, {}, 0, 1, 256);
  return s;
}

KernelSpec quantize_spec(int64_t cols, Emit emit) {
  KernelSpec s{"quantize.cu", {"quantize_rows"}, {{"COLS", num(cols)}}};
  add_emit(s, emit);
  set_launch(s, {}, 0, 1, 256);
  return s;
}

KvShape kv_shape(const graph::KvCacheConfig& c) {
  return KvShape{c.max_seq_len, c.block_size, c.ring_blocks, c.ring_layers, c.cross_len};
}

namespace {
// A store or attention kernel of a layer that keeps a ring reads it (kv_row, common.cuh).
KernelSpec with_ring(KernelSpec s, const KvShape& kv, int layer) {
  if (kv.in_ring(layer)) s.defines.push_back({"RING_BLOCKS", num(kv.ring_blocks)});
  return s;
}

// The shape of QkvRopeStore node n's kernels.
QkvShape qkv_shape(const graph::Graph& g, const Node& n, const KvShape& kv, float norm_eps) {
  QkvShape s;
  s.q = matmul_weight_type(g, n, n.weight);
  s.k = matmul_weight_type(g, n, n.aux[1]);
  s.v = matmul_weight_type(g, n, n.aux[2]);
  s.cols = g.weights()[n.weight].cols;
  s.n_head = n.n_head;
  s.n_head_kv = n.n_head_kv;
  s.head_dim = n.head_dim;
  s.rope = n.rope;
  s.has_freq_factors = n.rope.freq_factors >= 0;
  s.bias = n.aux[3] >= 0;
  s.norm_eps = norm_eps;
  s.block_size = kv.block_size;
  return s;
}

// The kernels of a matmul node that runs as a dense GEMM (dense_gemm_choice.h),
// in launch order: its tokens to f16 (with its RMSNorm), each matrix decoded
// to f16 (one after another in a scratch), one GEMM over all their rows (with
// gate/up's activation), and q/k/v's epilogue.
std::vector<KernelSpec> dense_node_specs(const graph::Graph& g, const Node& n, const KvShape& kv) {
  const float norm_eps = n.aux[0] >= 0 ? n.eps : -1.0f;
  const auto ws = graph::matrix_weights(n);
  const int64_t cols = g.weights()[ws.front()].cols;
  std::vector<KernelSpec> specs{rows_f16_spec(cols, norm_eps)};
  // Gate and up interleaved by 8 rows (decode_f16.cu's GLU_HALF), so that the
  // GEMM's epilogue finds both of an output in one thread.
  const bool glu = n.op == Op::GateUpGlu;
  int64_t rows = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    const graph::Weight& m = g.weights()[ws[i]];
    RAYO_CHECK(m.cols == cols, "the matrices of one node read rows of ", cols, " values");
    specs.push_back(decode_f16_spec(m.type, m.rows, cols, glu ? static_cast<int>(i) : -1));
    rows += m.rows;
  }
  specs.push_back(glu ? with_activation(dense_gemm_spec(rows, cols, true), n.act) : dense_gemm_spec(rows, cols));
  if (n.op == Op::QkvRopeStore) {
    // gemm_qkv_rope_store.cu's epilogue alone: the module of the node's f16 tile.
    KernelSpec e = with_ring(tensor_core_variant(qkv_rope_store_spec(qkv_shape(g, n, kv, norm_eps), 1)), kv, n.layer);
    e.entry = "rope_store_rows";
    e.dynamic_shared = 0;
    set_launch(e, {}, 0, 1, 128);
    specs.push_back(e);
  }
  return specs;
}
}  // namespace

std::vector<KernelSpec> node_kernel_specs(const graph::Graph& g, const Node& n, const KvShape& kv,
                                          const ActivationPlan& plan) {
  if (uses_dense_gemm(g, n)) return dense_node_specs(g, n, kv);
  const auto& values = g.values();
  const int index = static_cast<int>(&n - g.nodes().data());
  auto W = [&](int i) -> const graph::Weight& { return g.weights()[i]; };
  auto mm_type = [&](int i) { return matmul_weight_type(g, n, i); };
  const int64_t max_rows = n.in[0] >= 0 ? g.max_rows(values[n.in[0]]) : g.config().max_tokens;
  const int tt = gemv_token_tile(max_rows);
  const float norm_eps = n.aux[0] >= 0 ? n.eps : -1.0f;
  const Emit emit = emit_of(plan, index);
  const bool gemm = uses_gemm(g, n);
  auto matmul = [&](KernelSpec s) { return gemm ? tensor_core_variant(s, gemm_tile_for(g, n)) : s; };
  std::vector<KernelSpec> specs;
  for (int t : plan.quantize_before[static_cast<size_t>(index)]) {
    const Twin& tw = plan.twins[static_cast<size_t>(t)];
    specs.push_back(quantize_spec(tw.cols, Emit{tw.q8, tw.q8 && tw.norm_weight >= 0, tw.ss}));
  }
  switch (n.op) {
    case Op::Embed:
      if (!decodable(W(n.weight).type))
        fail("tensor '", W(n.weight).name, "' has type ", type_name(W(n.weight).type), ", which rayo cannot read");
      specs.push_back(dequant_spec(W(n.weight).type, W(n.weight).cols, emit, "embed", n.scale));
      return specs;
    case Op::RmsNorm: specs.push_back(rms_norm_spec(values[n.out].cols, n.group, n.eps)); return specs;
    case Op::MatMul:
      specs.push_back(matmul(gemv_spec(mm_type(n.weight), W(n.weight).cols, W(n.weight).rows, tt, -1.0f, 0, emit,
                                       gemv_slices(mm_type(n.weight), W(n.weight).rows, tt))));
      return specs;
    case Op::RmsNormMatMul:
      specs.push_back(matmul(gemv_spec(mm_type(n.weight), W(n.weight).cols, W(n.weight).rows, tt, n.eps, 0, emit,
                                       gemv_slices(mm_type(n.weight), W(n.weight).rows, tt))));
      return specs;
    case Op::MatMulAdd:
      specs.push_back(matmul(gemv_spec(mm_type(n.weight), W(n.weight).cols, W(n.weight).rows, tt, -1.0f, 1, emit,
                                       gemv_slices(mm_type(n.weight), W(n.weight).rows, tt))));
      return specs;
    case Op::AddBias: specs.push_back(elementwise_spec(values[n.out].cols, emit, "add_bias")); return specs;
    case Op::Add: specs.push_back(elementwise_spec(values[n.out].cols, emit, "add")); return specs;
    case Op::Glu: specs.push_back(with_activation(elementwise_spec(values[n.out].cols, emit, "swiglu"), n.act)); return specs;
    case Op::SelectRows: specs.push_back(elementwise_spec(values[n.out].cols, emit, "select_rows")); return specs;
    case Op::Rope: specs.push_back(rope_spec(n.n_head, n.head_dim, n.rope, n.rope.freq_factors >= 0)); return specs;
    case Op::KvStore:
      specs.push_back(with_ring(kv_store_spec(static_cast<int64_t>(n.n_head_kv) * n.head_dim, kv.block_size), kv, n.layer));
      return specs;
    case Op::Attention: {
      const bool flash = uses_flash_attention(g, n);
      specs.push_back(with_ring(attention_spec(n.n_head, n.n_head_kv, n.head_dim, kv.max_seq_len, kv.block_size,
                                               graph_attention_chunk(g, n, kv.max_seq_len), emit, flash,
                                               attention_scores(n)),
                                kv, n.layer));
      if (flash)
        specs.push_back(with_ring(
            attention_prefill_spec(n.n_head, n.n_head_kv, n.head_dim, kv.block_size, emit, attention_scores(n)), kv,
            n.layer));
      return specs;
    }
    case Op::GateUpGlu:
      specs.push_back(matmul(with_activation(
          gemv_swiglu_spec(mm_type(n.weight), mm_type(n.aux[1]), W(n.weight).cols, W(n.weight).rows, tt, norm_eps, emit),
          n.act)));
      return specs;
    case Op::QkvRopeStore: {
      const QkvShape s = qkv_shape(g, n, kv, norm_eps);
      specs.push_back(with_ring(matmul(qkv_rope_store_spec(s, tt, gemv_slices(s.q, s.rows(), tt))), kv, n.layer));
      return specs;
    }
    case Op::LayerNorm: specs.push_back(layer_norm_spec(values[n.out].cols, n.eps)); return specs;
    case Op::Gelu: specs.push_back(elementwise_spec(values[n.out].cols, emit, "gelu")); return specs;
    case Op::AddPosition: specs.push_back(elementwise_spec(values[n.out].cols, emit, "add_position")); return specs;
    case Op::Unfold:
      specs.push_back(conv1d_unfold_spec(values[n.out].cols / 3, n.stride, n.in[0] < 0));
      return specs;
    // Encoder-decoder attention: the scores of a row over the step's rows
    // (dense) or over a memory slot (cross); the store writes the rows of the
    // encoder's step, so its module is the dense attention's.
    case Op::DenseAttention:
    case Op::CrossKvStore: {
      // The encoder's attention on tensor cores where the head size allows (the f16 flash tile).
      const char* entry = n.op == Op::CrossKvStore                           ? "cross_kv_store"
                          : n.head_dim % 16 == 0 && n.head_dim <= 128 ? "dense_attention_tc"
                                                                        : "dense_attention";
      specs.push_back(encoder_decoder_attention_spec(entry, n.n_head, n.head_dim, g.config().max_tokens, kv.cross_len,
                                                     scores_scale(n)));
      return specs;
    }
    case Op::CrossAttention:
      RAYO_CHECK(kv.cross_len > 0, "cross-attention without a cross-attention memory");
      specs.push_back(
          encoder_decoder_attention_spec("cross_attention", n.n_head, n.head_dim, kv.cross_len, kv.cross_len, scores_scale(n)));
      return specs;
  }
  fail("the CUDA backend has no kernel for op ", graph::op_name(n.op));
}

std::vector<KernelSpec> graph_kernel_specs(const graph::Graph& g, const KvShape& kv) {
  std::vector<KernelSpec> out;
  std::set<std::string> seen;
  auto add = [&](const KernelSpec& s) {
    if (seen.insert(s.key()).second) out.push_back(s);
  };
  const ActivationPlan plan = plan_activations(g);
  for (const Node& n : g.nodes()) {
    for (const auto& s : node_kernel_specs(g, n, kv, plan)) add(s);
    for (int w : graph::matrix_weights(n)) {
      const auto& wt = g.weights()[w];
      if (matmul_weight_type(g, n, w) != wt.type) add(dequant_spec(wt.type, wt.cols, {}, "dequant_f16"));
    }
  }
  // The sampler, at the end of every step whose output rows are logits (not an encoder's).
  if (g.values()[g.output()].rows == graph::RowSpace::Outputs) add(sample_kernel_spec(g.values()[g.output()].cols));
  return out;
}

std::vector<KernelSpec> decoder_kernel_specs(const DecoderShape& s) {
  // The specs the activation plan gives a llama-like decode graph (one token):
  // embed and every residual GEMV write the next norm's twin, attention and
  // gate/up the twin of their output, select_rows the output norm's.
  const Emit normed{true, true, true}, plain{true, false, false};
  std::vector<KernelSpec> out;
  graph::RopeParams rope;
  rope.type = s.neox ? graph::RopeType::NeoX : graph::RopeType::Normal;
  rope.n_rot = s.head_dim;
  rope.freq_base = s.rope_base;
  out.push_back(dequant_spec(s.embd, s.n_embd, normed));
  QkvShape q;
  q.q = q.k = s.attn;
  q.v = s.attn_v;
  q.cols = s.n_embd;
  q.n_head = s.n_head;
  q.n_head_kv = s.n_head_kv;
  q.head_dim = s.head_dim;
  q.rope = rope;
  q.bias = s.qkv_bias;
  q.norm_eps = s.eps;
  q.block_size = s.block_size;
  out.push_back(qkv_rope_store_spec(q, 1, gemv_slices(q.q, q.rows(), 1)));
  // Q4_K_M keeps attn_v in Q4_K in some layers.
  if (s.attn_v != s.attn) {
    q.v = s.attn;
    out.push_back(qkv_rope_store_spec(q, 1, gemv_slices(q.q, q.rows(), 1)));
  }
  out.push_back(attention_spec(s.n_head, s.n_head_kv, s.head_dim, s.n_ctx, s.block_size,
                               attention_chunk(s.n_ctx, 1, s.n_head / s.n_head_kv), s.head_dim % 32 == 0 ? plain : Emit{}));
  const int64_t q_width = static_cast<int64_t>(s.n_head) * s.head_dim;
  out.push_back(gemv_spec(s.attn, q_width, s.n_embd, 1, -1.0f, 1, normed, gemv_slices(s.attn, s.n_embd, 1)));
  out.push_back(gemv_swiglu_spec(s.ffn, s.ffn, s.n_embd, s.n_ff, 1, s.eps, plain));
  for (TensorType down : {s.ffn_down, s.ffn}) {
    const int slices = gemv_slices(down, s.n_embd, 1);
    out.push_back(gemv_spec(down, s.n_ff, s.n_embd, 1, -1.0f, 1, normed, slices));
    out.push_back(gemv_spec(down, s.n_ff, s.n_embd, 1, -1.0f, 1, Emit{}, slices));  // the last layer's
    if (s.ffn_down == s.ffn) break;
  }
  // A prompt graph's matmuls on tensor cores (its token tile macro is 4), on
  // every tile (f16, int8, and a batch-invariant graph's exact one).
  const size_t decode_specs = out.size();
  for (size_t i = 0; i < decode_specs; ++i) {
    const std::string f = out[i].file;  // a copy: the push_backs below move out[i]
    if (f != "gemv.cu" && f != "gemv_swiglu.cu" && f != "qkv_rope_store.cu") continue;
    for (GemmTile tile : {GemmTile::F16, GemmTile::Int8, GemmTile::Exact}) {
      if (tile != GemmTile::F16 && f == "qkv_rope_store.cu" && s.head_dim % 64 != 0) continue;
      KernelSpec t = tensor_core_variant(out[i], tile);
      for (auto& [name, value] : t.defines)
        if (name == "TT") value = "4";
      out.push_back(t);
    }
  }
  out.push_back(elementwise_spec(s.n_embd, normed, "select_rows"));
  out.push_back(gemv_spec(s.output, s.n_embd, s.n_vocab, 1, s.eps, 0, {}, gemv_slices(s.output, s.n_vocab, 1)));
  out.push_back(sample_kernel_spec(s.n_vocab));
  return out;
}

}  // namespace rayo::cuda
