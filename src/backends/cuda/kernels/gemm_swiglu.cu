// gemv_swiglu.cu's product on tensor cores, for steps of many tokens:
// y[t][r] = act(Wg[r] . x[t]) * (Wu[r] . x[t]) (gate_act: SiLU or GELU-tanh), and,
// when asked, y's q8 twin.
// Same macros (TT unused), arguments, inputs and outputs as gemv_swiglu.cu;
// quantized weights only. A tile holds 32 rows of each matrix (shared rows 0..31
// gate, 32..63 up). Work split and shared memory: gemm.cuh.
// Grid: (ceil(max_rows / GEMM_TILE_TOKENS), ceil(ROWS / 32)); block GEMM_THREADS.
#include "gemm.cuh"
#include "gemm_namespace.cuh"

#define SWIGLU_ROWS (GEMM_ROWS / 2)
#ifndef GELU
#define GELU 0
#endif

RAYO_KERNEL GEMM_LAUNCH_BOUNDS
gemm_swiglu(const GateUpArgs args) {
  grid_dependency_wait();
  const int n = *args.n_rows;
  const int t0 = blockIdx.x * GEMM_TILE_TOKENS;
  if (t0 >= n) return;
  const int nt = n - t0 < GEMM_TILE_TOKENS ? n - t0 : GEMM_TILE_TOKENS;
  const long long row0 = static_cast<long long>(blockIdx.y) * SWIGLU_ROWS;
  GEMM_SHARED(sh);
  constexpr int kPerG = gemm_units_per_chunk<WTYPE>(), kPerU = gemm_units_per_chunk<WTYPE2>();
  auto units = [&](const UnitOp<COLS>& op) {
    for (int task = threadIdx.x; task < SWIGLU_ROWS * (kPerG + kPerU); task += GEMM_THREADS) {
      const bool gate = task < SWIGLU_ROWS * kPerG;
      const int local = gate ? task : task - SWIGLU_ROWS * kPerG, per = gate ? kPerG : kPerU;
      const int r = local / per;
      const long long row = row0 + r < ROWS ? row0 + r : ROWS - 1;
      if (gate)
        op(GemmMatrix<WTYPE, ROWS>{}, args.gate, row, local % per, r);
      else
        op(GemmMatrix<WTYPE2, ROWS>{}, args.up, row, local % per, SWIGLU_ROWS + r);
    }
  };
  gemm_tile<COLS, NORM != 0, WTYPE, WTYPE2>(units, args.xt.q + static_cast<long long>(t0) * COLS,
                             args.xt.ds + static_cast<long long>(t0) * (COLS / 32),
                             offset(args.xt.ss, static_cast<long long>(t0) * ((COLS + 31) / 32)), EPS, nt, sh);
  float (*out)[GEMM_ROWS] = sh.out();
  // y into the gate half of the sums (each thread reads and writes its own (t, r)).
  for (int i = threadIdx.x; i < GEMM_TILE_TOKENS * SWIGLU_ROWS; i += GEMM_THREADS) {
    const int t = i / SWIGLU_ROWS, r = i % SWIGLU_ROWS;
    const long long row = row0 + r;
    float v = 0.0f;
    if (t < nt && row < ROWS) {
      const float inv = NORM && !kNormInSums ? sh.inv()[t] : 1.0f;
      v = gate_act<GELU != 0>(out[t][r] * inv) * (out[t][SWIGLU_ROWS + r] * inv);
      args.y[(t0 + t) * static_cast<long long>(ROWS) + row] = v;
    }
    out[t][r] = v;
  }
  if (EMIT_Q8 || EMIT_SS) {
    __syncthreads();
    const int lane = threadIdx.x % WARP;
    for (int t = threadIdx.x / WARP; t < nt; t += GEMM_WARPS) {
      const TwinRow twin = twin_row<ROWS, EMIT_Q8 != 0, EMIT_SS != 0>(args.yt, t0 + t);
      emit_block32<false>(out[t][lane], 0.0f, static_cast<int>(blockIdx.y), twin.q, twin.ds, twin.ss);
    }
  }
}
