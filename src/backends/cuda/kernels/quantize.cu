// The q8 twin and row statistics (q8_act.cuh) of f32 rows, for activations
// whose producer does not write them itself.
// Shape macros: COLS (K), EMIT_Q8 (1: write q and ds; K % 32 == 0), EMIT_NORM
// (1: quantize x * norm_w), EMIT_SS (1: write the sums of squares).
// Grid: (max_rows); block QUANT_THREADS.
#include "q8_act.cuh"

#define QUANT_THREADS 256

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(QUANT_THREADS)
quantize_rows(const QuantizeArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  emit_twin_row<COLS, QUANT_THREADS, EMIT_NORM != 0>(
      args.x + static_cast<long long>(t) * COLS, args.norm_w,
      twin_row<COLS, EMIT_Q8 != 0, EMIT_SS != 0>(args.yt, t));
}
