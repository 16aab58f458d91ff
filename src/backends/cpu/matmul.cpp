// The matmul driver: validates, picks a kernel for (weight type, instruction
// set), quantizes the activations once into the workspace and spreads
// rows x tokens rectangles over the thread pool.
#include "backends/cpu/matmul.h"

#include <algorithm>
#include <atomic>

#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_packed.h"
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
    case TensorType::Q8_0: return ActKind::Q32;
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
  if (plan.act == ActKind::Float) {
    plan.kernel = detail::float_kernel(isa, w.type);
    plan.scratch_bytes = 0;
    return plan;
  }
  if (w.packed && detail::packed_kernel(isa, w.type) != nullptr) {
    plan.kernel = detail::packed_kernel(isa, w.type);
    plan.scratch_bytes = 0;
    plan.row_unit = detail::kPackRows;
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
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K: return true;
    default: return false;
  }
}

MatmulWeight prepare_weight(TensorType type, const void* data, int64_t rows, int64_t cols) {
  check_shape(type, rows, cols);
  if (data == nullptr) fail("matmul: weight data is null");
  MatmulWeight w;
  w.type = type;
  w.data = data;
  w.rows = rows;
  w.cols = cols;
  if (detail::packable(type) && detail::packed_kernel(active_isa(), type) != nullptr) w.packed = detail::pack_weight(type, data, rows, cols);
  return w;
}

size_t matmul_workspace_bytes(const MatmulWeight& w, int64_t n_tokens, int n_threads) {
  check_shape(w.type, w.rows, w.cols);
  size_t worst = 0;
  // The plan depends on the active instruction set; size for the largest.
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (!isa_supported(isa)) continue;
    const Plan plan = make_plan(w, isa);
    worst = std::max(worst, static_cast<size_t>(std::max<int64_t>(n_tokens, 1)) * plan.act_row_bytes +
                                static_cast<size_t>(std::max(n_threads, 1)) * plan.scratch_bytes);
  }
  return worst + kAlign;
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

  const Isa isa = active_isa();
  const Plan plan = make_plan(w, isa);
  const int n_threads = pool.size();
  std::byte* ws = nullptr;
  if (plan.act_row_bytes || plan.scratch_bytes) {
    if (workspace == nullptr) fail("matmul: workspace is null");
    ws = reinterpret_cast<std::byte*>(align_up(reinterpret_cast<uintptr_t>(workspace)));
  }
  std::byte* xq = ws;
  std::byte* scratch = ws ? ws + n_tokens * plan.act_row_bytes : nullptr;

  const MatmulProblem prob{&w, x, x_stride, xq, static_cast<int64_t>(plan.act_row_bytes), y, y_stride, n_tokens};

  // Work units: row chunks x token chunks, handed out in token-chunk-major
  // order so that the threads share one chunk of activations at a time.
  const int64_t token_chunk = n_tokens == 1 ? 1 : kTokenChunk;
  const int64_t n_tc = (n_tokens + token_chunk - 1) / token_chunk;
  const int64_t unit = plan.row_unit;
  const int64_t want_units = std::max<int64_t>(1, (n_tokens == 1 ? 8 : 4) * n_threads / n_tc);
  int64_t row_chunk = (w.rows + want_units - 1) / want_units;
  row_chunk = std::max(unit, (row_chunk + unit - 1) / unit * unit);
  if (n_tokens > 1) row_chunk = std::min<int64_t>(row_chunk, std::max<int64_t>(unit, 128 / unit * unit));
  const int64_t n_rc = (w.rows + row_chunk - 1) / row_chunk;
  const int64_t n_units = n_rc * n_tc;
  std::atomic<int64_t> next{0};

  pool.run([&](int ti, int nt) {
    if (plan.act != ActKind::Float) {
      const int64_t t_begin = n_tokens * ti / nt, t_end = n_tokens * (ti + 1) / nt;
      for (int64_t t = t_begin; t < t_end; ++t) {
        if (plan.act == ActKind::Q32)
          quantize_act32(isa, x + t * x_stride, w.cols, reinterpret_cast<ActBlock32*>(xq + t * plan.act_row_bytes));
        else
          quantize_actk(isa, x + t * x_stride, w.cols, reinterpret_cast<ActBlockK*>(xq + t * plan.act_row_bytes));
      }
      pool.barrier();
    }
    std::byte* my_scratch = scratch ? scratch + static_cast<size_t>(ti) * plan.scratch_bytes : nullptr;
    for (;;) {
      const int64_t u = next.fetch_add(1, std::memory_order_relaxed);
      if (u >= n_units) break;
      const int64_t tc = u / n_rc, rc = u % n_rc;
      const int64_t r0 = rc * row_chunk, r1 = std::min(w.rows, r0 + row_chunk);
      const int64_t t0 = tc * token_chunk, t1 = std::min(n_tokens, t0 + token_chunk);
      plan.kernel(prob, r0, r1, t0, t1, my_scratch);
    }
  });
}

}  // namespace rayo::cpu
