// y[t] = W . x[t] (+ epilogue) for the token rows t < *n_rows, and, when asked,
// the q8 twin and row statistics of y for the next matmul (q8_act.cuh).
// Shape macros: WTYPE (ggml type id of W), COLS (K), ROWS (M), TT (token rows
// per block), NORM (1: x is RMS-normalised first: the fused RMSNorm+MatMul;
// EPS), EPI (0: none, 1: + residual[t][row], the fused MatMul+Add, 2: +
// bias[row]), EMIT_Q8 (write y's q8 twin), EMIT_NORM (quantize y *
// y_norm_w: the next RMSNorm's weight), EMIT_SS (write y's ss statistics).
// Inputs: x f32 [rows][COLS] for float W; its q8 twin (xq, xds) for quantized
// W; xss (its statistics) when NORM; norm_w (the norm's weight) for float W.
// W layout: weight_layout.h (quantized: planes; float: the file's rows).
// Grid: (ceil(max_rows / TT), ceil(ROWS / GEMV_ROWS)), or (ceil(ROWS / GEMV_ROWS),
// 1) for TT 1 (gemv.cuh); block GEMV_THREADS * GEMV_SLICES: GEMV_SLICES
// (default 1; 2: TT 1, quantized W) K slices of each row (gemv.cuh).
// Work split and loads: gemv.cuh.
#include "gemv.cuh"
#ifndef GEMV_SLICES
#define GEMV_SLICES 1
#endif

// Decode (TT = 1) runs two blocks per SM: at most 128 registers, which every
// format fits without a spill; with one (Q6_K took 136) the 4008 blocks of
// llama3-8b's output matrix read at 56% of the copy bandwidth instead of 78%
// (H200). Token tiles keep the registers their sums need; so do two K slices,
// one block of 512 threads an SM.
RAYO_KERNEL RAYO_LAUNCH_BOUNDS_MIN(GEMV_THREADS * GEMV_SLICES, TT == 1 && GEMV_SLICES == 1 ? 2 : 1)
gemv(const MatmulArgs args) {
  grid_dependency_wait();
  int t0, nt;
  if (!token_tile<TT>(args.n_rows, t0, nt)) return;
  const int warp = threadIdx.x / (WARP * GEMV_SLICES), slice = threadIdx.x / WARP % GEMV_SLICES;
  const int lane = threadIdx.x % WARP;
  const long long row0 = static_cast<long long>(row_block<TT>()) * GEMV_ROWS + warp * GEMV_ROWS_PER_WARP;
  float inv[TT];
  row_inv_rms<COLS, TT, NORM != 0>(offset(args.xt.ss, t0 * ((COLS + 31) / 32)), nt, EPS, inv);
  const GemvInput in{offset(args.x, static_cast<long long>(t0) * COLS),
                     offset(args.xt.q, static_cast<long long>(t0) * COLS),
                     offset(args.xt.ds, static_cast<long long>(t0) * (COLS / 32)), nullptr, args.norm_w};
  long long rows[GEMV_ROWS_PER_WARP];
  clamp_rows<ROWS>(row0, rows);
  float acc[GEMV_ROWS_PER_WARP][TT];
  warp_rows<WTYPE, ROWS, COLS, TT, NORM != 0, GEMV_SLICES>(args.w, rows, in, inv, nt, acc);
  allow_dependent_launch();
  __shared__ float out[TT][GEMV_ROWS];
  if (slice == 0 && lane == 0) {
RAYO_UNROLL
    for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) {
      const long long row = row0 + r;
RAYO_UNROLL
      for (int t = 0; t < TT; ++t) {
        if (t >= nt) continue;
        float v = acc[r][t];
        if (row < ROWS) {
          if (EPI == 1) v += args.epi[(t0 + t) * static_cast<long long>(ROWS) + row];
          if (EPI == 2) v += args.epi[row];
          args.y[(t0 + t) * static_cast<long long>(ROWS) + row] = v;
        } else {
          v = 0.0f;
        }
        out[t][warp * GEMV_ROWS_PER_WARP + r] = v;
      }
    }
  }
  if (EMIT_Q8 || EMIT_SS) {
    __syncthreads();
    const TwinRow first = twin_row<ROWS, EMIT_Q8 != 0, EMIT_SS != 0>(args.yt, t0);
    emit_twin_rows<ROWS, EMIT_NORM != 0>(out, row_block<TT>(), nt, args.y_norm_w, first.q, first.ds, first.ss);
  }
}
