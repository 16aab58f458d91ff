// Row decoding of weights in any supported format (load8, common.cuh), from
// the file's layout.
// embed: y[t] = row tokens[t] of the embedding matrix, as f32, and, when asked,
// the row's q8 twin and statistics for the first layer's matmuls (q8_act.cuh).
// dequant_f16: the whole matrix as f16 rows (for a quantized weight that shares
// a fused node with float weights: the node then runs on the float path).
// Shape macros: WTYPE, COLS, EMIT_Q8, EMIT_NORM, EMIT_SS (as gemv.cu);
// EMBED_SCALE (embed: the rows' multiplier, Gemma's sqrt(n_embd); default 1).
// Grid: (max_rows) or (rows); block 128.
#include "q8_act.cuh"

#define EMBED_THREADS 128
#ifndef EMBED_SCALE
#define EMBED_SCALE 1.0f
#endif

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(EMBED_THREADS)
embed(const EmbedArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  const u8* row = args.w + static_cast<long long>(args.tokens[t]) * fmt_row_bytes<WTYPE>(COLS);
  float* out = args.y + static_cast<long long>(t) * COLS;
  for (int g = threadIdx.x; g < COLS / 8; g += EMBED_THREADS) {
    float v[8];
    load8<WTYPE>(row, g, v);
RAYO_UNROLL
    for (int i = 0; i < 8; ++i) out[8 * g + i] = v[i] * EMBED_SCALE;
  }
  if constexpr (COLS % 8 != 0)
    for (int k = (COLS / 8) * 8 + threadIdx.x; k < COLS; k += EMBED_THREADS)
      out[k] = load1<WTYPE>(row, k) * EMBED_SCALE;
  if (EMIT_Q8 || EMIT_SS) {
    __syncthreads();
    emit_twin_row<COLS, EMBED_THREADS, EMIT_NORM != 0>(
        out, args.norm_w, twin_row<COLS, EMIT_Q8 != 0, EMIT_SS != 0>(args.yt, t));
  }
}

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(128) dequant_f16(const DequantArgs args) {
  grid_dependency_wait();
  for (long long r = blockIdx.x; r < args.rows; r += gridDim.x) {
    const u8* row = args.w + r * fmt_row_bytes<WTYPE>(COLS);
    for (int g = threadIdx.x; g < COLS / 8; g += blockDim.x) {
      float v[8];
      load8<WTYPE>(row, g, v);
RAYO_UNROLL
      for (int i = 0; i < 8; ++i) args.out[r * COLS + 8 * g + i] = f2h(v[i]);
    }
    if constexpr (COLS % 8 != 0)
      for (int k = (COLS / 8) * 8 + threadIdx.x; k < COLS; k += blockDim.x)
        args.out[r * COLS + k] = f2h(load1<WTYPE>(row, k));
  }
}
