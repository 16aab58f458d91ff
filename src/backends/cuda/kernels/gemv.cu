// y[t] = W . x[t] (+ epilogue) for the token rows t < *n_rows.
// Shape macros: WTYPE (ggml type id of W), COLS (K, input features), ROWS (M,
// output features), TT (token rows per block), NORM (1: x is RMS-normalised
// with norm_w and EPS first: the fused RMSNorm+MatMul), EPI (0: none,
// 1: + residual[t][row] (fused MatMul+Add), 2: + bias[row]).
// W layout: the GGUF tensor as stored, ROWS rows of COLS values in WTYPE
// (row r at byte r * row_bytes); no repacking.
// Grid: (ceil(ROWS / GEMV_WARPS), ceil(max_rows / TT)); block GEMV_THREADS.
#include "gemv.cuh"

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(GEMV_THREADS)
gemv(const u8* w, const float* x, float* y, const float* norm_w, const float* epi, const int* n_rows) {
  const int n = *n_rows;
  const int t0 = blockIdx.y * TT;
  if (t0 >= n) return;
  const int nt = n - t0 < TT ? n - t0 : TT;
  __shared__ float inv[TT];
  __shared__ float scratch[GEMV_WARPS];
  if (NORM) block_inv_rms<COLS, TT>(x + t0 * COLS, nt, EPS, inv, scratch);
  const int row = blockIdx.x * GEMV_WARPS + threadIdx.x / WARP;
  if (row >= ROWS) return;
  float acc[TT];
RAYO_UNROLL
  for (int t = 0; t < TT; ++t) acc[t] = 0.0f;
  row_dot<WTYPE, COLS, TT, NORM != 0>(w + static_cast<long long>(row) * fmt_row_bytes<WTYPE>(COLS), x + t0 * COLS, nt,
                                      norm_w, inv, acc);
  if (threadIdx.x % WARP == 0) {
RAYO_UNROLL
    for (int t = 0; t < TT; ++t) {
      if (t < nt) {
        float v = acc[t];
        if (EPI == 1) v += epi[(t0 + t) * ROWS + row];
        if (EPI == 2) v += epi[row];
        y[(t0 + t) * ROWS + row] = v;
      }
    }
  }
}
