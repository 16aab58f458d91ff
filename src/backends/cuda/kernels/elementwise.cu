// Row-wise elementwise ops on [rows][COLS] f32 matrices, rows < *n_rows.
// Shape macros: COLS; EMIT_Q8, EMIT_NORM, EMIT_SS: what
// select_rows writes of its output's twin for the logits matmul (q8_act.cuh,
// as gemv.cu). Grid: (max_rows); block 256.
#include "q8_act.cuh"

#define EW_THREADS 256

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(EW_THREADS) add(const float* a, const float* b, float* y, const int* n_rows) {
  const int t = blockIdx.x;
  if (t >= *n_rows) return;
  for (int i = threadIdx.x; i < COLS; i += EW_THREADS) y[t * COLS + i] = a[t * COLS + i] + b[t * COLS + i];
}

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(EW_THREADS) add_bias(const float* a, const float* bias, float* y, const int* n_rows) {
  const int t = blockIdx.x;
  if (t >= *n_rows) return;
  for (int i = threadIdx.x; i < COLS; i += EW_THREADS) y[t * COLS + i] = a[t * COLS + i] + bias[i];
}

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(EW_THREADS) swiglu(const float* gate, const float* up, float* y, const int* n_rows) {
  const int t = blockIdx.x;
  if (t >= *n_rows) return;
  for (int i = threadIdx.x; i < COLS; i += EW_THREADS) y[t * COLS + i] = silu(gate[t * COLS + i]) * up[t * COLS + i];
}

// y[r] = x[rows[r]] for r < *n_rows (the rows that get logits), and y's twin.
RAYO_KERNEL RAYO_LAUNCH_BOUNDS(EW_THREADS)
select_rows(const float* x, float* y, const int* rows, const float* norm_w, i8* yq, float2* yds, float* yss,
            const int* n_rows) {
  const int r = blockIdx.x;
  if (r >= *n_rows) return;
  const float* src = x + static_cast<long long>(rows[r]) * COLS;
  float* out = y + static_cast<long long>(r) * COLS;
  for (int i = threadIdx.x; i < COLS; i += EW_THREADS) out[i] = src[i];
  if (EMIT_Q8 || EMIT_SS) {
    __syncthreads();
    emit_twin_row<COLS, EW_THREADS, EMIT_NORM != 0>(
        out, norm_w, twin_row<COLS>(EMIT_Q8 ? yq : nullptr, EMIT_Q8 ? yds : nullptr, EMIT_SS ? yss : nullptr, r));
  }
}
