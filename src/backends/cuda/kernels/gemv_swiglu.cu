// The fused feed-forward input: y[t][r] = silu(Wg[r] . x[t]) * (Wu[r] . x[t]).
// Shape macros: WTYPE (gate format), WTYPE2 (up format; a Q4_K_M file may mix),
// COLS, ROWS (n_ff), TT, NORM, EPS as in gemv.cu. Layouts as gemv.cu.
// Grid: (ceil(ROWS / GEMV_WARPS), ceil(max_rows / TT)); block GEMV_THREADS.
#include "gemv.cuh"

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(GEMV_THREADS)
gemv_swiglu(const u8* wg, const u8* wu, const float* x, float* y, const float* norm_w, const int* n_rows) {
  const int n = *n_rows;
  const int t0 = blockIdx.y * TT;
  if (t0 >= n) return;
  const int nt = n - t0 < TT ? n - t0 : TT;
  __shared__ float inv[TT];
  __shared__ float scratch[GEMV_WARPS];
  if (NORM) block_inv_rms<COLS, TT>(x + t0 * COLS, nt, EPS, inv, scratch);
  const int row = blockIdx.x * GEMV_WARPS + threadIdx.x / WARP;
  if (row >= ROWS) return;
  float g[TT], u[TT];
RAYO_UNROLL
  for (int t = 0; t < TT; ++t) g[t] = u[t] = 0.0f;
  row_dot<WTYPE, COLS, TT, NORM != 0>(wg + static_cast<long long>(row) * fmt_row_bytes<WTYPE>(COLS), x + t0 * COLS,
                                      nt, norm_w, inv, g);
  row_dot<WTYPE2, COLS, TT, NORM != 0>(wu + static_cast<long long>(row) * fmt_row_bytes<WTYPE2>(COLS), x + t0 * COLS,
                                       nt, norm_w, inv, u);
  if (threadIdx.x % WARP == 0) {
RAYO_UNROLL
    for (int t = 0; t < TT; ++t)
      if (t < nt) y[(t0 + t) * ROWS + row] = silu(g[t]) * u[t];
  }
}
