// The matmul driver: validates, picks a kernel for (weight type, instruction
// set), quantizes the activations once into the workspace and spreads
// rows x tokens rectangles over the thread pool.
#include "backends/cpu/matmul.h"

#include <algorithm>
#include <atomic>
#include <array>

#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_packed.h"
#include "backends/cpu/packed_layouts.h"
#include "common/error.h"

namespace rayo::cpu {

using detail::ActKind;
using detail::MatmulProblem;
using detail::TileKernel;

namespace detail {

ActKind act_kind(TensorType type) {
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16: return ActKind::Float;
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::IQ4_NL: return ActKind::Q32;
    default: return ActKind::QK;
  }
}

}  // namespace detail

namespace {

constexpr size_t kAlign = 64;
inline size_t align_up(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }

// Tokens per work unit in prompt processing: the quantized activations of a
// chunk (64 x ~2.5 KiB at K = 2048) stay in L2 while a thread walks its rows.
constexpr int64_t kTokenChunk = 64;

struct Plan {
  ActKind act;
  TileKernel kernel;
  size_t act_row_bytes;  // workspace bytes per token (0 for float activations)
  size_t scratch_bytes;  // per thread
  int64_t row_unit;      // rows per work unit are a multiple of this
};

Plan make_plan(const MatmulWeight& w, Isa isa) {
  Plan plan{};
  plan.act = detail::act_kind(w.type);
  plan.row_unit = 4;
  switch (plan.act) {
    case ActKind::Float: plan.act_row_bytes = 0; break;
    case ActKind::Q32: plan.act_row_bytes = align_up(w.cols / 32 * sizeof(ActBlock32)); break;
    case ActKind::QK: plan.act_row_bytes = align_up(w.cols / 256 * sizeof(ActBlockK)); break;
  }
  // The packed copy was made for the tier active at load; a test that changes
  // the tier afterwards gets the portable kernels over the file's bytes.
  if (const detail::PackedKernel pk = detail::packed_kernel(isa, w.type);
      w.packed && pk.kernel && pk.group_rows == w.packed->group_rows) {
    plan.kernel = pk.kernel;
    plan.scratch_bytes = 0;
    plan.row_unit = pk.group_rows;
    return plan;
  }
  if (plan.act == ActKind::Float) {
    plan.kernel = detail::float_kernel(isa, w.type);
    plan.scratch_bytes = 0;
    return plan;
  }
  plan.kernel = detail::generic_quant_kernel(isa, w.type);
  plan.scratch_bytes = align_up(detail::generic_scratch_bytes(w.cols));
  return plan;
}

void check_shape(TensorType type, int64_t rows, int64_t cols) {
  if (!matmul_supported(type)) fail("matmul: weight type ", type_name(type), " is not supported on the CPU");
  const auto& ti = info(type);
  if (rows < 1 || cols < 1) fail("matmul: bad weight shape ", rows, " x ", cols);
  if (cols % ti.block_size != 0)
    fail("matmul: a ", type_name(type), " row of ", cols, " values is not a whole number of ",
         ti.block_size, "-value blocks");
}

}  // namespace

bool matmul_supported(TensorType type) {
  // Every format rayo decodes but Q8_1 and Q8_K (llama.cpp's activation
  // formats, never a model's weights) and MXFP4 (no CPU kernel yet).
  const auto t = tensor_type_info(static_cast<uint32_t>(type));
  return t && t->decodes && type != TensorType::Q8_1 && type != TensorType::Q8_K && type != TensorType::MXFP4;
}

MatmulWeight prepare_weight(TensorType type, const void* data, int64_t rows, int64_t cols) {
  check_shape(type, rows, cols);
  if (data == nullptr) fail("matmul: weight data is null");
  MatmulWeight w;
  w.type = type;
  w.data = data;
  w.rows = rows;
  w.cols = cols;
  if (const detail::PackedKernel pk = detail::packed_kernel(active_isa(), type); pk.kernel)
    w.packed = detail::packed::pack(type, data, rows, cols, pk.group_rows);
  return w;
}

namespace {

constexpr size_t kMaxProducts = 4;

// One product of a matmul_many call, planned.
struct Product {
  const MatmulWeight* w = nullptr;
  float* y = nullptr;
  int64_t y_stride = 0;
  Plan plan{};
  int64_t row_chunk = 0, n_rc = 0;  // rows per work unit, units per token chunk
};

// Bytes of quantized activations per token for each activation form the
// weights need: [Q32, QK] (float activations need none).
std::pair<size_t, size_t> act_bytes(std::span<const MatmulWeight* const> weights, Isa isa) {
  size_t q32 = 0, qk = 0;
  for (const MatmulWeight* w : weights) {
    const Plan plan = make_plan(*w, isa);
    if (plan.act == ActKind::Q32) q32 = std::max(q32, plan.act_row_bytes);
    if (plan.act == ActKind::QK) qk = std::max(qk, plan.act_row_bytes);
  }
  return {q32, qk};
}

// The products of one pool run: the activations are quantized once per form
// (each thread a share of the tokens), then the work units of all products --
// row chunks x token chunks, token-chunk-major so that the threads share one
// chunk of activations at a time -- are handed out from one counter.
void run_products(ThreadPool& pool, std::span<Product> products, const float* x, int64_t x_stride, int64_t n_tokens,
                  void* workspace) {
  const Isa isa = active_isa();
  const int n_threads = pool.size();
  const int64_t cols = products[0].w->cols;
  size_t scratch_bytes = 0, q32_bytes = 0, qk_bytes = 0;
  for (Product& p : products) {
    p.plan = make_plan(*p.w, isa);
    scratch_bytes = std::max(scratch_bytes, p.plan.scratch_bytes);
    if (p.plan.act == ActKind::Q32) q32_bytes = p.plan.act_row_bytes;
    if (p.plan.act == ActKind::QK) qk_bytes = p.plan.act_row_bytes;
  }
  std::byte* ws = nullptr;
  if (q32_bytes || qk_bytes || scratch_bytes) {
    if (workspace == nullptr) fail("matmul: workspace is null");
    ws = reinterpret_cast<std::byte*>(align_up(reinterpret_cast<uintptr_t>(workspace)));
  }
  std::byte* xq32 = ws;
  std::byte* xqk = ws ? xq32 + n_tokens * q32_bytes : nullptr;
  std::byte* scratch = ws ? xqk + n_tokens * qk_bytes : nullptr;

  const int64_t token_chunk = n_tokens == 1 ? 1 : kTokenChunk;
  const int64_t n_tc = (n_tokens + token_chunk - 1) / token_chunk;
  int64_t units_per_tc = 0;  // row chunks of all products
  // The work units are sized over the rows of all the products together, so
  // that a small product beside a large one (k and v beside q) is not cut
  // into slivers: every unit start costs a ramp of the weight stream.
  int64_t total_rows = 0;
  for (const Product& p : products) total_rows += p.w->rows;
  const int64_t want_units = std::max<int64_t>(1, (n_tokens == 1 ? 8 : 4) * n_threads / n_tc);
  const int64_t unit_rows = (total_rows + want_units - 1) / want_units;
  for (Product& p : products) {
    const int64_t unit = p.plan.row_unit;
    int64_t row_chunk = std::min(p.w->rows, unit_rows);
    row_chunk = std::max(unit, (row_chunk + unit - 1) / unit * unit);
    if (n_tokens > 1) row_chunk = std::min<int64_t>(row_chunk, std::max<int64_t>(unit, 128 / unit * unit));
    p.row_chunk = row_chunk;
    p.n_rc = (p.w->rows + row_chunk - 1) / row_chunk;
    units_per_tc += p.n_rc;
  }
  const int64_t n_units = units_per_tc * n_tc;
  std::atomic<int64_t> next{0};

  pool.run([&](int ti, int nt) {
    if (q32_bytes || qk_bytes) {
      const int64_t t_begin = n_tokens * ti / nt, t_end = n_tokens * (ti + 1) / nt;
      for (int64_t t = t_begin; t < t_end; ++t) {
        if (q32_bytes)
          quantize_act32(isa, x + t * x_stride, cols, reinterpret_cast<ActBlock32*>(xq32 + t * q32_bytes));
        if (qk_bytes)
          quantize_actk(isa, x + t * x_stride, cols, reinterpret_cast<ActBlockK*>(xqk + t * qk_bytes));
      }
      pool.barrier();
    }
    std::byte* my_scratch = scratch_bytes ? scratch + static_cast<size_t>(ti) * scratch_bytes : nullptr;
    for (;;) {
      const int64_t u = next.fetch_add(1, std::memory_order_relaxed);
      if (u >= n_units) break;
      const int64_t tc = u / units_per_tc;
      int64_t rc = u % units_per_tc;
      size_t i = 0;
      while (rc >= products[i].n_rc) rc -= products[i++].n_rc;
      const Product& p = products[i];
      const bool q32 = p.plan.act == ActKind::Q32;
      const MatmulProblem prob{p.w, x, x_stride, q32 ? xq32 : xqk, static_cast<int64_t>(q32 ? q32_bytes : qk_bytes),
                               p.y, p.y_stride, n_tokens};
      const int64_t r0 = rc * p.row_chunk, r1 = std::min(p.w->rows, r0 + p.row_chunk);
      const int64_t t0 = tc * token_chunk, t1 = std::min(n_tokens, t0 + token_chunk);
      p.plan.kernel(prob, r0, r1, t0, t1, my_scratch);
    }
  });
}

}  // namespace

size_t matmul_workspace_bytes(std::span<const MatmulWeight* const> weights, int64_t n_tokens, int n_threads) {
  size_t worst = 0;
  // The plan depends on the active instruction set; size for the largest.
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (!isa_supported(isa)) continue;
    size_t scratch = 0;
    for (const MatmulWeight* w : weights) {
      check_shape(w->type, w->rows, w->cols);
      scratch = std::max(scratch, make_plan(*w, isa).scratch_bytes);
    }
    const auto [q32, qk] = act_bytes(weights, isa);
    worst = std::max(worst, static_cast<size_t>(std::max<int64_t>(n_tokens, 1)) * (q32 + qk) +
                                static_cast<size_t>(std::max(n_threads, 1)) * scratch);
  }
  return worst + kAlign;
}

size_t matmul_workspace_bytes(const MatmulWeight& w, int64_t n_tokens, int n_threads) {
  const MatmulWeight* one[] = {&w};
  return matmul_workspace_bytes(one, n_tokens, n_threads);
}

void matmul(ThreadPool& pool, const MatmulWeight& w, const float* x, int64_t n_tokens, float* y, void* workspace,
            MatmulStrides strides) {
  check_shape(w.type, w.rows, w.cols);
  if (n_tokens < 0) fail("matmul: negative token count ", n_tokens);
  if (n_tokens == 0) return;
  if (x == nullptr || y == nullptr) fail("matmul: null activation or output");
  const int64_t x_stride = strides.x ? strides.x : w.cols;
  const int64_t y_stride = strides.y ? strides.y : w.rows;
  if (x_stride < w.cols || y_stride < w.rows) fail("matmul: row stride smaller than the row");
  Product product{&w, y, y_stride, {}};
  run_products(pool, std::span<Product>(&product, 1), x, x_stride, n_tokens, workspace);
}

void matmul_many(ThreadPool& pool, std::span<const MatmulOutput> outputs, const float* x, int64_t n_tokens,
                 void* workspace) {
  if (outputs.empty()) return;
  if (n_tokens < 0) fail("matmul: negative token count ", n_tokens);
  if (n_tokens == 0) return;
  if (x == nullptr) fail("matmul: null activation");
  if (outputs.size() > kMaxProducts) fail("matmul: more than ", kMaxProducts, " products of one activation");
  std::array<Product, kMaxProducts> products;  // no allocation: this runs several times per layer and step
  for (size_t i = 0; i < outputs.size(); ++i) {
    const MatmulOutput& o = outputs[i];
    check_shape(o.w->type, o.w->rows, o.w->cols);
    if (o.w->cols != outputs[0].w->cols) fail("matmul: products of one activation with different widths");
    if (o.y == nullptr) fail("matmul: null output");
    products[i] = {o.w, o.y, o.w->rows, {}};
  }
  run_products(pool, std::span<Product>(products.data(), outputs.size()), x, outputs[0].w->cols, n_tokens, workspace);
}

}  // namespace rayo::cpu
