// The first half of a kernel-3 convolution with padding 1 (Whisper's two
// front-end convolutions): output frame t's row[c * 3 + k] = in(c, t * STRIDE
// + k - 1), zero outside the input, as cpu::conv1d_unfold_row; a matrix
// product with the weight [out][CHANNELS * 3] and the bias complete it. The
// input is frame-major (in(c, f) = x[f * CHANNELS + c]: a previous layer's
// rows) or, with CHANNEL_MAJOR, [CHANNELS][in_frames] (the log-mel features).
// Shape macros: CHANNELS, STRIDE, CHANNEL_MAJOR. Grid: (max_rows); block 256.
#include "common.cuh"

#define UNFOLD_THREADS 256

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(UNFOLD_THREADS) conv1d_unfold(const UnfoldArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  const int in_frames = *args.in_frames;
  float* row = args.y + static_cast<long long>(t) * (CHANNELS * 3);
  for (int i = threadIdx.x; i < CHANNELS * 3; i += UNFOLD_THREADS) {
    const int c = i / 3, k = i % 3;
    const int f = t * STRIDE + k - 1;
    float v = 0.0f;
    if (f >= 0 && f < in_frames)
      v = CHANNEL_MAJOR ? args.x[static_cast<long long>(c) * in_frames + f]
                        : args.x[static_cast<long long>(f) * CHANNELS + c];
    row[i] = v;
  }
}
