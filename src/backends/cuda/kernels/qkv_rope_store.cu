// The fused attention input: q, k, v = Wq.x (+bq), Wk.x (+bk), Wv.x (+bv);
// rotary embedding of q and k at positions[t]; k and v stored in the layer's f16
// KV cache at row positions[t]; q written to q_out. Replaces three MatMuls,
// their biases, two Ropes and the KvStore (and the RMSNorm before them when NORM).
// Shape macros: QTYPE, KTYPE, VTYPE (formats), COLS (n_embd), N_HEAD, N_HEAD_KV,
// HEAD_DIM, N_ROT, ROPE_NEOX (0: adjacent pairs, 1: halves), THETA_SCALE,
// FREQ_SCALE (float literals), HAS_FF (rope frequency factors), QKV_BIAS, NORM,
// EPS, TT, BLOCK_SIZE (positions per KV cache block).
// Work split: one warp computes one pair of output rows, the two values a rope
// rotation mixes (2i, 2i+1) or (i, i + N_ROT/2) of a head, so the rotation
// happens in registers. Pairs are numbered q first, then k, then v.
// KV cache layout: per layer, [rows][N_HEAD_KV * HEAD_DIM] halves, row-major;
// paged: the row of (seq[t], positions[t]) comes from the block table (kv_row).
// Grid: (ceil(PAIRS / GEMV_WARPS), ceil(max_rows / TT)); block GEMV_THREADS.
#include "gemv.cuh"

#define Q_PAIRS (N_HEAD * HEAD_DIM / 2)
#define KV_PAIRS (N_HEAD_KV * HEAD_DIM / 2)
#define QKV_PAIRS (Q_PAIRS + 2 * KV_PAIRS)

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(GEMV_THREADS)
qkv_rope_store(const u8* wq, const u8* wk, const u8* wv, const float* bq, const float* bk, const float* bv,
               const float* x, const float* norm_w, const float* freq_factors, float* q_out, u16* k_cache,
               u16* v_cache, const int* positions, const int* seq, const int* block_table, const int* max_blocks,
               const int* n_rows) {
  const int n = *n_rows;
  const int t0 = blockIdx.y * TT;
  if (t0 >= n) return;
  const int nt = n - t0 < TT ? n - t0 : TT;
  __shared__ float inv[TT];
  __shared__ float scratch[GEMV_WARPS];
  if (NORM) block_inv_rms<COLS, TT>(x + t0 * COLS, nt, EPS, inv, scratch);
  int pair = blockIdx.x * GEMV_WARPS + threadIdx.x / WARP;
  if (pair >= QKV_PAIRS) return;
  const int which = pair < Q_PAIRS ? 0 : pair < Q_PAIRS + KV_PAIRS ? 1 : 2;
  if (which == 1) pair -= Q_PAIRS;
  if (which == 2) pair -= Q_PAIRS + KV_PAIRS;
  const int head = pair / (HEAD_DIM / 2), i = pair % (HEAD_DIM / 2);
  int d0, d1;  // the pair's dims within the head
  if (which == 2 || i >= N_ROT / 2) {
    d0 = 2 * i;
    d1 = 2 * i + 1;
  } else if (ROPE_NEOX) {
    d0 = i;
    d1 = i + N_ROT / 2;
  } else {
    d0 = 2 * i;
    d1 = 2 * i + 1;
  }
  const int r0 = head * HEAD_DIM + d0, r1 = head * HEAD_DIM + d1;
  float a0[TT], a1[TT];
RAYO_UNROLL
  for (int t = 0; t < TT; ++t) a0[t] = a1[t] = 0.0f;
  const float* xt = x + t0 * COLS;
  const float* bias;
  if (which == 0) {
    const long long rb = fmt_row_bytes<QTYPE>(COLS);
    row_dot<QTYPE, COLS, TT, NORM != 0>(wq + r0 * rb, xt, nt, norm_w, inv, a0);
    row_dot<QTYPE, COLS, TT, NORM != 0>(wq + r1 * rb, xt, nt, norm_w, inv, a1);
    bias = bq;
  } else if (which == 1) {
    const long long rb = fmt_row_bytes<KTYPE>(COLS);
    row_dot<KTYPE, COLS, TT, NORM != 0>(wk + r0 * rb, xt, nt, norm_w, inv, a0);
    row_dot<KTYPE, COLS, TT, NORM != 0>(wk + r1 * rb, xt, nt, norm_w, inv, a1);
    bias = bk;
  } else {
    const long long rb = fmt_row_bytes<VTYPE>(COLS);
    row_dot<VTYPE, COLS, TT, NORM != 0>(wv + r0 * rb, xt, nt, norm_w, inv, a0);
    row_dot<VTYPE, COLS, TT, NORM != 0>(wv + r1 * rb, xt, nt, norm_w, inv, a1);
    bias = bv;
  }
  if (threadIdx.x % WARP != 0) return;
RAYO_UNROLL
  for (int t = 0; t < TT; ++t) {
    if (t >= nt) continue;
    float x0 = a0[t], x1 = a1[t];
    if (QKV_BIAS) {
      x0 += bias[r0];
      x1 += bias[r1];
    }
    const int pos = positions[t0 + t];
    if (which < 2 && i < N_ROT / 2) {
      const float ff = HAS_FF ? freq_factors[i] : 1.0f;
      const float angle = rope_angle(pos, i, THETA_SCALE, FREQ_SCALE, ff);
      const float c = cosf(angle), s = sinf(angle);
      const float y0 = x0 * c - x1 * s;
      const float y1 = x0 * s + x1 * c;
      x0 = y0;
      x1 = y1;
    }
    if (which == 0) {
      q_out[(t0 + t) * (N_HEAD * HEAD_DIM) + r0] = x0;
      q_out[(t0 + t) * (N_HEAD * HEAD_DIM) + r1] = x1;
    } else {
      u16* cache = which == 1 ? k_cache : v_cache;
      const long long row = kv_row(block_table, seq[t0 + t], *max_blocks, pos, BLOCK_SIZE) * (N_HEAD_KV * HEAD_DIM);
      cache[row + r0] = f2h(x0);
      cache[row + r1] = f2h(x1);
    }
  }
}
