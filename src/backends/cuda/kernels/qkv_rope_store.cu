// The fused attention input: q, k, v = Wq.x (+bq), Wk.x (+bk), Wv.x (+bv);
// rotary embedding of q and k at positions[t]; k and v stored in the layer's f16
// KV cache at row positions[t]; q written to q_out. Replaces three MatMuls,
// their biases, two Ropes and the KvStore (and the RMSNorm before them when NORM).
// Shape macros: QTYPE, KTYPE, VTYPE (formats: all quantized or all float),
// COLS (n_embd), N_HEAD, N_HEAD_KV, HEAD_DIM (a multiple of 4), N_ROT,
// ROPE_NEOX (0: adjacent pairs, 1: halves), THETA_SCALE, FREQ_SCALE (float
// literals), HAS_FF (rope frequency factors), QKV_BIAS, NORM, EPS, TT,
// BLOCK_SIZE (positions per KV cache block). Inputs as gemv.cu.
// Work split: warp w of the grid computes output pairs 2w and 2w + 1, four rows:
// the two values each rope rotation mixes, (2i, 2i+1) or (i, i + N_ROT/2) of a
// head, so the rotation happens in registers. Pairs are numbered q first, then
// k, then v; the pairs of a head are even in number, so a warp's two pairs
// share a matrix and a head. Loads and sums as gemv.cuh.
// KV cache layout: per layer, [rows][N_HEAD_KV * HEAD_DIM] halves, row-major;
// paged: the row of (seq[t], positions[t]) comes from the block table (kv_row).
// Grid: (ceil(max_rows / TT), ceil(QKV_PAIRS / (2 * GEMV_WARPS))), the rows on x
// for TT 1 (gemv.cuh); block GEMV_THREADS * GEMV_SLICES (K slices, gemv.cuh;
// default 1; 2: TT 1, quantized weights).
#include "gemv.cuh"
#ifndef GEMV_SLICES
#define GEMV_SLICES 1
#endif
#ifndef RING_BLOCKS
#define RING_BLOCKS 0  // a sliding-window layer's ring of cache blocks per sequence (kv_row, common.cuh)
#endif

#define Q_PAIRS (N_HEAD * HEAD_DIM / 2)
#define KV_PAIRS (N_HEAD_KV * HEAD_DIM / 2)
#define QKV_PAIRS (Q_PAIRS + 2 * KV_PAIRS)

static_assert(HEAD_DIM % 4 == 0, "a warp's two pairs must lie in one head");

// The dims of pair i of a head: (d0, d1).
__device__ __forceinline__ void pair_dims(int i, bool rotated, int* d0, int* d1) {
  if (rotated && ROPE_NEOX && i < N_ROT / 2) {
    *d0 = i;
    *d1 = i + N_ROT / 2;
  } else {
    *d0 = 2 * i;
    *d1 = 2 * i + 1;
  }
}

// Decode (TT = 1) runs two blocks per SM (at most 128 registers, which every
// format fits without a spill), as gemv.cu; one with two K slices.
RAYO_KERNEL RAYO_LAUNCH_BOUNDS_MIN(GEMV_THREADS * GEMV_SLICES, TT == 1 && GEMV_SLICES == 1 ? 2 : 1)
qkv_rope_store(const QkvArgs args) {
  grid_dependency_wait();
  int t0, nt;
  if (!token_tile<TT>(args.n_rows, t0, nt)) return;
  const int warp = threadIdx.x / (WARP * GEMV_SLICES), slice = threadIdx.x / WARP % GEMV_SLICES;
  // The warp's first pair. Warps past the last pair leave, or with slices
  // take it again, unwritten: every warp meets the slices' barriers.
  const int own = (row_block<TT>() * GEMV_WARPS + warp) * 2;
  const bool live = own < QKV_PAIRS;
  if (GEMV_SLICES == 1 && !live) return;
  const int first = live ? own : QKV_PAIRS - 2;
  const int which = first < Q_PAIRS ? 0 : first < Q_PAIRS + KV_PAIRS ? 1 : 2;
  const int local = first - (which == 0 ? 0 : which == 1 ? Q_PAIRS : Q_PAIRS + KV_PAIRS);
  const int head = local / (HEAD_DIM / 2);
  int dims[4];
  pair_dims(local % (HEAD_DIM / 2), which < 2, &dims[0], &dims[1]);
  pair_dims(local % (HEAD_DIM / 2) + 1, which < 2, &dims[2], &dims[3]);
  long long rows[GEMV_ROWS_PER_WARP];
RAYO_UNROLL
  for (int r = 0; r < 4; ++r) rows[r] = head * HEAD_DIM + dims[r];

  float inv[TT];
  row_inv_rms<COLS, TT, NORM != 0>(offset(args.xt.ss, t0 * ((COLS + 31) / 32)), nt, EPS, inv);
  const GemvInput in{offset(args.x, static_cast<long long>(t0) * COLS),
                     offset(args.xt.q, static_cast<long long>(t0) * COLS),
                     offset(args.xt.ds, static_cast<long long>(t0) * (COLS / 32)), nullptr, args.norm_w};
  float acc[GEMV_ROWS_PER_WARP][TT];
  const float* bias;
  if (which == 0) {
    warp_rows<QTYPE, N_HEAD * HEAD_DIM, COLS, TT, NORM != 0, GEMV_SLICES>(args.wq, rows, in, inv, nt, acc);
    bias = args.bq;
  } else if (which == 1) {
    warp_rows<KTYPE, N_HEAD_KV * HEAD_DIM, COLS, TT, NORM != 0, GEMV_SLICES>(args.wk, rows, in, inv, nt, acc);
    bias = args.bk;
  } else {
    warp_rows<VTYPE, N_HEAD_KV * HEAD_DIM, COLS, TT, NORM != 0, GEMV_SLICES>(args.wv, rows, in, inv, nt, acc);
    bias = args.bv;
  }
  allow_dependent_launch();
  // Lanes 0..TT-1 of slice 0 each finish one token: bias, rotation, store.
  const int t = threadIdx.x % WARP;
  if (!live || slice != 0 || t >= nt) return;
  float v[4];
RAYO_UNROLL
  for (int r = 0; r < 4; ++r) {
    // acc[r][t] for a lane-dependent t: select without dynamic register indexing.
    float a = 0.0f;
RAYO_UNROLL
    for (int s = 0; s < TT; ++s)
      if (s == t) a = acc[r][s];
    v[r] = QKV_BIAS ? a + bias[rows[r]] : a;
  }
  const int pos = args.kv.positions[t0 + t];
  if (which < 2) {
RAYO_UNROLL
    for (int p = 0; p < 2; ++p) {
      const int i = local % (HEAD_DIM / 2) + p;
      if (i < N_ROT / 2) {
        const float ff = HAS_FF ? args.freq_factors[i] : 1.0f;
        const float angle = rope_angle(pos, i, THETA_SCALE, FREQ_SCALE, ff);
        const float c = cosf(angle), s = sinf(angle);
        const float y0 = v[2 * p] * c - v[2 * p + 1] * s;
        const float y1 = v[2 * p] * s + v[2 * p + 1] * c;
        v[2 * p] = y0;
        v[2 * p + 1] = y1;
      }
    }
  }
  if (which == 0) {
RAYO_UNROLL
    for (int r = 0; r < 4; ++r) args.q_out[(t0 + t) * static_cast<long long>(N_HEAD * HEAD_DIM) + rows[r]] = v[r];
  } else {
    u16* cache = which == 1 ? args.k_cache : args.v_cache;
    const long long row = kv_row(args.kv, t0 + t, pos, BLOCK_SIZE, RING_BLOCKS) * (N_HEAD_KV * HEAD_DIM);
RAYO_UNROLL
    for (int r = 0; r < 4; ++r) cache[row + rows[r]] = f2h(v[r]);
  }
}
