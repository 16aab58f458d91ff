// Row-wise elementwise ops on [rows][COLS] f32 matrices, rows < *n_rows.
// (gelu and add_position serve encoder-decoder models: Whisper.)
// Shape macros: COLS; GELU (swiglu's gate activation, common.cuh); EMIT_Q8, EMIT_NORM, EMIT_SS: what
// select_rows writes of its output's twin for the logits matmul (q8_act.cuh,
// as gemv.cu). Grid: (max_rows); block 256.
#include "q8_act.cuh"

#define EW_THREADS 256
#ifndef GELU
#define GELU 0
#endif

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(EW_THREADS) add(const RowsArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  for (int i = threadIdx.x; i < COLS; i += EW_THREADS)
    args.y[t * COLS + i] = args.a[t * COLS + i] + args.b[t * COLS + i];
}

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(EW_THREADS) add_bias(const RowsArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  for (int i = threadIdx.x; i < COLS; i += EW_THREADS) args.y[t * COLS + i] = args.a[t * COLS + i] + args.b[i];
}

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(EW_THREADS) swiglu(const RowsArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  for (int i = threadIdx.x; i < COLS; i += EW_THREADS)
    args.y[t * COLS + i] = gate_act<GELU != 0>(args.a[t * COLS + i]) * args.b[t * COLS + i];
}

// y = x / 2 * (1 + erf(x / sqrt 2)): the exact GELU (Whisper's), as cpu::gelu_row.
RAYO_KERNEL RAYO_LAUNCH_BOUNDS(EW_THREADS) gelu(const RowsArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  for (int i = threadIdx.x; i < COLS; i += EW_THREADS) {
    const float x = args.a[t * COLS + i];
    args.y[t * COLS + i] = 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  }
}

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(EW_THREADS) add_position(const PositionArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  const float* row = args.table + static_cast<long long>(args.positions[t]) * COLS;
  for (int i = threadIdx.x; i < COLS; i += EW_THREADS) args.y[t * COLS + i] = args.a[t * COLS + i] + row[i];
}

// y[r] = x[rows[r]] for r < *n_rows (the rows that get logits), and y's twin.
RAYO_KERNEL RAYO_LAUNCH_BOUNDS(EW_THREADS)
select_rows(const SelectRowsArgs args) {
  grid_dependency_wait();
  const int r = blockIdx.x;
  if (r >= *args.n_rows) return;
  const float* src = args.x + static_cast<long long>(args.rows[r]) * COLS;
  float* out = args.y + static_cast<long long>(r) * COLS;
  for (int i = threadIdx.x; i < COLS; i += EW_THREADS) out[i] = src[i];
  if (EMIT_Q8 || EMIT_SS) {
    __syncthreads();
    emit_twin_row<COLS, EW_THREADS, EMIT_NORM != 0>(
        out, args.norm_w, twin_row<COLS, EMIT_Q8 != 0, EMIT_SS != 0>(args.yt, r));
  }
}
