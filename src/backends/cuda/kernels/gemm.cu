// gemv.cu's product on tensor cores, for steps of many tokens: y[t] = W . x[t]
// (+ epilogue) for the token rows t < *n_rows, and, when asked, y's twin.
// Same macros (TT unused), arguments, inputs and outputs as gemv.cu; quantized
// W (from the input's q8 twin), or F16 W as stored (from the f32 input, no
// fused norm: gemm_tile_half_rows). Work split and shared memory: gemm.cuh.
// Grid: (ceil(max_rows / GEMM_TILE_TOKENS), ceil(ROWS / GEMM_ROWS)): the blocks of
// a row tile are adjacent, so their weights are read from L2 after the first.
// Block GEMM_THREADS.
#include "gemm.cuh"
#include "gemm_namespace.cuh"

RAYO_KERNEL GEMM_LAUNCH_BOUNDS
gemm(const MatmulArgs args) {
  grid_dependency_wait();
  const int n = *args.n_rows;
  const int t0 = blockIdx.x * GEMM_TILE_TOKENS;
  if (t0 >= n) return;
  const int nt = n - t0 < GEMM_TILE_TOKENS ? n - t0 : GEMM_TILE_TOKENS;
  const long long row0 = static_cast<long long>(blockIdx.y) * GEMM_ROWS;
  GEMM_SHARED(sh);
#if WTYPE == FMT_F16 && !GEMM_EXACT
  static_assert(!NORM, "F16 weights on tensor cores take no fused norm");
  gemm_tile_half_rows<ROWS, COLS>(reinterpret_cast<const u16*>(args.w), row0,
                                  args.x + static_cast<long long>(t0) * COLS, nt, sh);
#else
  constexpr int kPer = gemm_units_per_chunk<WTYPE>();
  auto units = [&](const UnitOp<COLS>& op) {
    for (int task = threadIdx.x; task < GEMM_ROWS * kPer; task += GEMM_THREADS) {
      const int r = task / kPer;
      const long long row = row0 + r < ROWS ? row0 + r : ROWS - 1;  // rows past the matrix: read, not written
      op(GemmMatrix<WTYPE, ROWS>{}, args.w, row, task % kPer, r);
    }
  };
  gemm_tile<COLS, NORM != 0, WTYPE, WTYPE>(units, args.xt.q + static_cast<long long>(t0) * COLS,
                             args.xt.ds + static_cast<long long>(t0) * (COLS / 32),
                             offset(args.xt.ss, static_cast<long long>(t0) * ((COLS + 31) / 32)), EPS, nt, sh);
#endif
  float (*out)[GEMM_ROWS] = sh.out();
  for (int i = threadIdx.x; i < GEMM_TILE_TOKENS * GEMM_ROWS; i += GEMM_THREADS) {
    const int t = i / GEMM_ROWS, r = i % GEMM_ROWS;
    const long long row = row0 + r;
    float v = 0.0f;
    if (t < nt && row < ROWS) {
      v = out[t][r] * (NORM && !kNormInSums ? sh.inv()[t] : 1.0f);
      if (EPI == 1) v += args.epi[(t0 + t) * static_cast<long long>(ROWS) + row];
      if (EPI == 2) v += args.epi[row];
      args.y[(t0 + t) * static_cast<long long>(ROWS) + row] = v;
    }
    out[t][r] = v;
  }
  if (EMIT_Q8 || EMIT_SS) {
    __syncthreads();
    const int lane = threadIdx.x % WARP;
    for (int task = threadIdx.x / WARP; task < nt * (GEMM_ROWS / 32); task += GEMM_WARPS) {
      const int t = task / (GEMM_ROWS / 32), blk = task % (GEMM_ROWS / 32);
      const long long col = row0 + 32 * blk + lane;
      const float nw = EMIT_NORM && col < ROWS ? args.y_norm_w[col] : 0.0f;
      const TwinRow twin = twin_row<ROWS, EMIT_Q8 != 0, EMIT_SS != 0>(args.yt, t0 + t);
      if (row0 + 32 * blk < ROWS)
        emit_block32<EMIT_NORM != 0>(out[t][32 * blk + lane], nw, static_cast<int>((row0 + 32 * blk) / 32), twin.q,
                                     twin.ds, twin.ss);
    }
  }
}
