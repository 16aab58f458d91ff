// y = x / sqrt(mean(x^2) + EPS) * w over each group of GROUP values of a row
// (GROUP = COLS for the layer norms, HEAD_DIM for Qwen3's per-head q/k norms);
// w has GROUP values. As cpu::rms_norm_row (which sums in double; here a float
// tree sum).
// Shape macros: COLS, GROUP, EPS. Grid: (max_rows); block 256.
#include "common.cuh"

#define NORM_THREADS 256

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(NORM_THREADS)
rms_norm(const RowsArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  const float* xr = args.a + t * COLS;
  float* yr = args.y + t * COLS;
  if (GROUP == COLS) {
    __shared__ float scratch[NORM_THREADS / WARP];
    float s = 0.0f;
    for (int i = threadIdx.x; i < COLS; i += NORM_THREADS) s += xr[i] * xr[i];
    s = block_sum<NORM_THREADS>(s, scratch);
    const float scale = 1.0f / sqrtf(s / static_cast<float>(COLS) + EPS);
    for (int i = threadIdx.x; i < COLS; i += NORM_THREADS) yr[i] = xr[i] * scale * args.b[i];
  } else {  // one warp per group
    const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
    for (int g = warp; g < COLS / GROUP; g += NORM_THREADS / WARP) {
      const float* xg = xr + g * GROUP;
      float s = 0.0f;
      for (int i = lane; i < GROUP; i += WARP) s += xg[i] * xg[i];
      s = warp_sum(s);
      const float scale = 1.0f / sqrtf(s / static_cast<float>(GROUP) + EPS);
      for (int i = lane; i < GROUP; i += WARP) yr[g * GROUP + i] = xg[i] * scale * args.b[i];
    }
  }
}
