// Rotary position embedding of the N_HEAD heads of each token row, at
// positions[t] (read from device memory). As cpu::rope_row.
// Shape macros: N_HEAD, HEAD_DIM, N_ROT, ROPE_NEOX, THETA_SCALE, FREQ_SCALE, HAS_FF.
// Grid: (max_rows); block 128 threads over the row's pairs.
#include "common.cuh"

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(128)
rope(const RopeArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  const int pos = args.positions[t];
  const float* xr = args.x + t * (N_HEAD * HEAD_DIM);
  float* yr = args.y + t * (N_HEAD * HEAD_DIM);
  for (int p = threadIdx.x; p < N_HEAD * (HEAD_DIM / 2); p += blockDim.x) {
    const int head = p / (HEAD_DIM / 2), i = p % (HEAD_DIM / 2);
    const float* xh = xr + head * HEAD_DIM;
    float* yh = yr + head * HEAD_DIM;
    if (i >= N_ROT / 2) {  // dims past n_rot are copied
      yh[2 * i] = xh[2 * i];
      yh[2 * i + 1] = xh[2 * i + 1];
      continue;
    }
    const int d0 = ROPE_NEOX ? i : 2 * i, d1 = ROPE_NEOX ? i + N_ROT / 2 : 2 * i + 1;
    const float ff = HAS_FF ? args.freq_factors[i] : 1.0f;
    const float angle = rope_angle(pos, i, THETA_SCALE, FREQ_SCALE, ff);
    const float c = cosf(angle), s = sinf(angle);
    const float x0 = xh[d0], x1 = xh[d1];
    yh[d0] = x0 * c - x1 * s;
    yh[d1] = x0 * s + x1 * c;
  }
}
