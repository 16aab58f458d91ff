// y = (x - mean) / sqrt(var + EPS) * w + bias over each row of COLS values
// (Whisper's LayerNorm), as cpu::layer_norm_row, which sums in double: here
// float tree sums, the variance from the deviations (a second pass over the
// row, which stays in L1), not from E[x^2] - mean^2, whose cancellation would
// cost the digits the CPU keeps.
// Shape macros: COLS, EPS. Grid: (max_rows); block 256.
#include "common.cuh"

#define LN_THREADS 256

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(LN_THREADS)
layer_norm(const LayerNormArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  const float* xr = args.a + static_cast<long long>(t) * COLS;
  float* yr = args.y + static_cast<long long>(t) * COLS;
  __shared__ float scratch[LN_THREADS / WARP];
  float s = 0.0f;
  for (int i = threadIdx.x; i < COLS; i += LN_THREADS) s += xr[i];
  const float mean = block_sum<LN_THREADS>(s, scratch) / static_cast<float>(COLS);
  float d2 = 0.0f;
  for (int i = threadIdx.x; i < COLS; i += LN_THREADS) {
    const float d = xr[i] - mean;
    d2 += d * d;
  }
  const float var = block_sum<LN_THREADS>(d2, scratch) / static_cast<float>(COLS);
  const float scale = 1.0f / sqrtf(var + EPS);
  for (int i = threadIdx.x; i < COLS; i += LN_THREADS) yr[i] = (xr[i] - mean) * scale * args.w[i] + args.bias[i];
}
