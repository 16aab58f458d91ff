// The dense GEMM's tokens (gemm_dense.cu, dense_gemm_choice.h: uses_dense_gemm),
// which it multiplies as f16: y = f16(x), or with NORM f16(x / rms(x) *
// norm_w), the RMSNorm the matmul node fuses applied before the rounding, so
// that rows whose values pass f16's 65 504 do not overflow (as rmsnorm.cu).
// Shape macros: COLS, NORM, EPS. Grid: (max_rows); block 256.
#include "common.cuh"

#define DENSE_ROW_THREADS 256
#ifndef NORM
#define NORM 0
#endif
#ifndef EPS
#define EPS 0.0f
#endif

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(DENSE_ROW_THREADS) rows_f16(const HalfRowsArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  const float* xr = args.x + static_cast<long long>(t) * COLS;
  u16* yr = args.y + static_cast<long long>(t) * COLS;
  float scale = 1.0f;
  if (NORM) {
    __shared__ float scratch[DENSE_ROW_THREADS / WARP];
    float s = 0.0f;
    for (int i = threadIdx.x; i < COLS; i += DENSE_ROW_THREADS) s += xr[i] * xr[i];
    s = block_sum<DENSE_ROW_THREADS>(s, scratch);
    scale = 1.0f / sqrtf(s / static_cast<float>(COLS) + EPS);
  }
  for (int i = threadIdx.x; i < COLS; i += DENSE_ROW_THREADS) yr[i] = f2h(NORM ? xr[i] * scale * args.norm_w[i] : xr[i]);
}
