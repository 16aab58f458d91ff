// The fused feed-forward input: y[t][r] = act(Wg[r] . x[t]) * (Wu[r] . x[t]),
// act SiLU or, with GELU=1, GELU-tanh (common.cuh: gate_act), and, when asked,
// y's q8 twin for the down projection (q8_act.cuh).
// Shape macros: WTYPE (gate format), WTYPE2 (up format; a Q4_K_M file may mix
// two quantized formats, never a quantized and a float one), COLS, ROWS (n_ff),
// TT, NORM, EPS, EMIT_Q8, EMIT_SS as in gemv.cu. Inputs and layouts as gemv.cu.
// Grid: (ceil(max_rows / TT), ceil(ROWS / GEMV_ROWS)), or (ceil(ROWS / GEMV_ROWS),
// 1) for TT 1 (gemv.cuh); block GEMV_THREADS: each warp multiplies its 4 rows
// of both matrices, their loads in flight together.
#include "gemv.cuh"

#ifndef GELU
#define GELU 0
#endif

// Decode (TT = 1) runs two blocks per SM (at most 128 registers) where that
// costs no spill (ptxas, sm_80 and sm_90): every pair but those holding Q3_K
// or Q6_K, whose 8 rows of decoded weights need more. The 14336-row gate/up of
// an 8B model is 448 blocks: 3.4 waves of one block per SM, 1.7 of two.
#define GEMV_SWIGLU_MIN_BLOCKS \
  (TT == 1 && WTYPE != FMT_Q3_K && WTYPE != FMT_Q6_K && WTYPE2 != FMT_Q3_K && WTYPE2 != FMT_Q6_K ? 2 : 1)
RAYO_KERNEL RAYO_LAUNCH_BOUNDS_MIN(GEMV_THREADS, GEMV_SWIGLU_MIN_BLOCKS)
gemv_swiglu(const GateUpArgs args) {
  grid_dependency_wait();
  int t0, nt;
  if (!token_tile<TT>(args.n_rows, t0, nt)) return;
  const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
  const long long row0 = static_cast<long long>(row_block<TT>()) * GEMV_ROWS + warp * GEMV_ROWS_PER_WARP;
  float inv[TT];
  row_inv_rms<COLS, TT, NORM != 0>(offset(args.xt.ss, t0 * ((COLS + 31) / 32)), nt, EPS, inv);
  const GemvInput in{offset(args.x, static_cast<long long>(t0) * COLS),
                     offset(args.xt.q, static_cast<long long>(t0) * COLS),
                     offset(args.xt.ds, static_cast<long long>(t0) * (COLS / 32)), nullptr, args.norm_w};
  long long rows[GEMV_ROWS_PER_WARP];
  clamp_rows<ROWS>(row0, rows);
  float g[GEMV_ROWS_PER_WARP][TT], u[GEMV_ROWS_PER_WARP][TT];
  warp_rows_pair<WTYPE, WTYPE2, ROWS, COLS, TT, NORM != 0>(args.gate, args.up, rows, in, inv, nt, g, u);
  allow_dependent_launch();
  __shared__ float out[TT][GEMV_ROWS];
  if (lane == 0) {
RAYO_UNROLL
    for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) {
      const long long row = row0 + r;
RAYO_UNROLL
      for (int t = 0; t < TT; ++t) {
        if (t >= nt) continue;
        float v = 0.0f;
        if (row < ROWS) {
          v = gate_act<GELU != 0>(g[r][t]) * u[r][t];
          args.y[(t0 + t) * static_cast<long long>(ROWS) + row] = v;
        }
        out[t][warp * GEMV_ROWS_PER_WARP + r] = v;
      }
    }
  }
  if (EMIT_Q8 || EMIT_SS) {
    __syncthreads();
    const TwinRow first = twin_row<ROWS, EMIT_Q8 != 0, EMIT_SS != 0>(args.yt, t0);
    emit_twin_rows<ROWS, false>(out, row_block<TT>(), nt, nullptr, first.q, first.ds, first.ss);
  }
}
