// Row decoding of weights in any supported format (load8, common.cuh).
// embed: y[t] = row tokens[t] of the embedding matrix, as f32.
// dequant_f16: the whole matrix as f16 rows (the fallback for formats without
// a tuned GEMV: the F16 GEMV then reads it).
// Shape macros: WTYPE, COLS. Grid: (max_rows) or (rows); block 128.
#include "common.cuh"

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(128) embed(const u8* w, const int* tokens, float* y, const int* n_rows) {
  const int t = blockIdx.x;
  if (t >= *n_rows) return;
  const u8* row = w + static_cast<long long>(tokens[t]) * fmt_row_bytes<WTYPE>(COLS);
  for (int g = threadIdx.x; g < COLS / 8; g += blockDim.x) {
    float v[8];
    load8<WTYPE>(row, g, v);
RAYO_UNROLL
    for (int i = 0; i < 8; ++i) y[t * COLS + 8 * g + i] = v[i];
  }
  if constexpr (COLS % 8 != 0)
    for (int k = (COLS / 8) * 8 + threadIdx.x; k < COLS; k += blockDim.x) y[t * COLS + k] = load1<WTYPE>(row, k);
}

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(128) dequant_f16(const u8* w, u16* out, long long rows) {
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const u8* row = w + r * fmt_row_bytes<WTYPE>(COLS);
    for (int g = threadIdx.x; g < COLS / 8; g += blockDim.x) {
      float v[8];
      load8<WTYPE>(row, g, v);
RAYO_UNROLL
      for (int i = 0; i < 8; ++i) out[r * COLS + 8 * g + i] = f2h(v[i]);
    }
    if constexpr (COLS % 8 != 0)
      for (int k = (COLS / 8) * 8 + threadIdx.x; k < COLS; k += blockDim.x) out[r * COLS + k] = f2h(load1<WTYPE>(row, k));
  }
}
