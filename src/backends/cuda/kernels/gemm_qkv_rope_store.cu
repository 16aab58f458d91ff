// qkv_rope_store.cu's product on tensor cores, for steps of many tokens: q, k,
// v projections (+ biases), rotary embedding of q and k at positions[t], k and
// v stored in the layer's f16 KV cache, q written to q_out.
// Same macros (TT unused), arguments, inputs and outputs as qkv_rope_store.cu;
// quantized weights only. A tile holds 32 output pairs (shared rows 2p, 2p+1:
// the two values a rotation mixes, as qkv_rope_store.cu numbers them: q, then
// k, then v), so the rotation happens in the epilogue. Work split and shared
// memory: gemm.cuh.
// Grid: (ceil(max_rows / GEMM_TILE_TOKENS), ceil(QKV_PAIRS / 32)); block GEMM_THREADS.
// rope_store_rows: the same epilogue alone, for q, k and v multiplied by the
// dense GEMM (gemm_dense.cu) of a prompt step.
#include "gemm.cuh"
#include "gemm_namespace.cuh"
#ifndef RING_BLOCKS
#define RING_BLOCKS 0  // a sliding-window layer's ring of cache blocks per sequence (kv_row, common.cuh)
#endif

#define Q_PAIRS (N_HEAD * HEAD_DIM / 2)
#define KV_PAIRS (N_HEAD_KV * HEAD_DIM / 2)
#define QKV_PAIRS (Q_PAIRS + 2 * KV_PAIRS)
#define TILE_PAIRS (GEMM_ROWS / 2)

// Pair p (of all QKV_PAIRS): its matrix (0 q, 1 k, 2 v), its index i within the
// head, its head, and its two rows in that matrix.
struct QkvPair {
  int which, i, head;
  long long r0, r1;
};
__device__ __forceinline__ QkvPair qkv_pair(int p) {
  QkvPair q;
  q.which = p < Q_PAIRS ? 0 : p < Q_PAIRS + KV_PAIRS ? 1 : 2;
  const int local = p - (q.which == 0 ? 0 : q.which == 1 ? Q_PAIRS : Q_PAIRS + KV_PAIRS);
  q.head = local / (HEAD_DIM / 2);
  q.i = local % (HEAD_DIM / 2);
  int d0 = 2 * q.i, d1 = 2 * q.i + 1;
  if (q.which < 2 && ROPE_NEOX && q.i < N_ROT / 2) d0 = q.i, d1 = q.i + N_ROT / 2;
  q.r0 = static_cast<long long>(q.head) * HEAD_DIM + d0;
  q.r1 = static_cast<long long>(q.head) * HEAD_DIM + d1;
  return q;
}

// Pair qp's two values x0, x1 of token row t: their biases, their rotation
// (q and k), and q's to q_out, k's and v's to the KV cache.
__device__ __forceinline__ void qkv_pair_out(const QkvArgs& args, const QkvPair& qp, int t, float x0, float x1) {
  if (QKV_BIAS) {
    const float* bias = qp.which == 0 ? args.bq : qp.which == 1 ? args.bk : args.bv;
    x0 += bias[qp.r0];
    x1 += bias[qp.r1];
  }
  const int pos = args.kv.positions[t];
  if (qp.which < 2 && qp.i < N_ROT / 2) {
    const float ff = HAS_FF ? args.freq_factors[qp.i] : 1.0f;
    const float angle = rope_angle(pos, qp.i, THETA_SCALE, FREQ_SCALE, ff);
    const float c = cosf(angle), s = sinf(angle);
    const float y0 = x0 * c - x1 * s;
    const float y1 = x0 * s + x1 * c;
    x0 = y0;
    x1 = y1;
  }
  if (qp.which == 0) {
    float* q = args.q_out + t * static_cast<long long>(N_HEAD * HEAD_DIM);
    q[qp.r0] = x0;
    q[qp.r1] = x1;
  } else {
    u16* cache = qp.which == 1 ? args.k_cache : args.v_cache;
    const long long row = kv_row(args.kv, t, pos, BLOCK_SIZE, RING_BLOCKS) * (N_HEAD_KV * HEAD_DIM);
    cache[row + qp.r0] = f2h(x0);
    cache[row + qp.r1] = f2h(x1);
  }
}

RAYO_KERNEL GEMM_LAUNCH_BOUNDS
gemm_qkv_rope_store(const QkvArgs args) {
  grid_dependency_wait();
  const int n = *args.n_rows;
  const int t0 = blockIdx.x * GEMM_TILE_TOKENS;
  if (t0 >= n) return;
  const int nt = n - t0 < GEMM_TILE_TOKENS ? n - t0 : GEMM_TILE_TOKENS;
  const int pair0 = blockIdx.y * TILE_PAIRS;
  GEMM_SHARED(sh);
  // Every shared row takes up to 8 unit tasks (the 32-value formats' count); a
  // format with fewer units per chunk skips the rest.
  auto units = [&](const UnitOp<COLS>& op) {
    for (int task = threadIdx.x; task < GEMM_ROWS * 8; task += GEMM_THREADS) {
      const int srow = task / 8, uc = task % 8;
      const int p = pair0 + srow / 2 < QKV_PAIRS ? pair0 + srow / 2 : QKV_PAIRS - 1;
      const QkvPair qp = qkv_pair(p);
      const long long row = srow % 2 ? qp.r1 : qp.r0;
      if (qp.which == 0) {
        if (uc < gemm_units_per_chunk<QTYPE>()) op(GemmMatrix<QTYPE, N_HEAD * HEAD_DIM>{}, args.wq, row, uc, srow);
      } else if (qp.which == 1) {
        if (uc < gemm_units_per_chunk<KTYPE>()) op(GemmMatrix<KTYPE, N_HEAD_KV * HEAD_DIM>{}, args.wk, row, uc, srow);
      } else {
        if (uc < gemm_units_per_chunk<VTYPE>()) op(GemmMatrix<VTYPE, N_HEAD_KV * HEAD_DIM>{}, args.wv, row, uc, srow);
      }
    }
  };
  const i8* tq = args.xt.q + static_cast<long long>(t0) * COLS;
  const float2* tds = args.xt.ds + static_cast<long long>(t0) * (COLS / 32);
  const float* tss = offset(args.xt.ss, static_cast<long long>(t0) * ((COLS + 31) / 32));
#if GEMM_EXACT
  // Each tile holds pairs of one matrix (the host checks HEAD_DIM % 64 == 0),
  // whose format decides how the tokens are staged.
  const int which = qkv_pair(pair0).which;
  if (which == 0)
    gemm_tile<COLS, NORM != 0, QTYPE, QTYPE>(units, tq, tds, tss, EPS, nt, sh);
  else if (which == 1)
    gemm_tile<COLS, NORM != 0, KTYPE, KTYPE>(units, tq, tds, tss, EPS, nt, sh);
  else
    gemm_tile<COLS, NORM != 0, VTYPE, VTYPE>(units, tq, tds, tss, EPS, nt, sh);
#else
  gemm_tile<COLS, NORM != 0, QTYPE, QTYPE>(units, tq, tds, tss, EPS, nt, sh);
#endif
  float (*out)[GEMM_ROWS] = sh.out();
  for (int task = threadIdx.x; task < GEMM_TILE_TOKENS * TILE_PAIRS; task += GEMM_THREADS) {
    const int t = task / TILE_PAIRS, pl = task % TILE_PAIRS, p = pair0 + pl;
    if (t >= nt || p >= QKV_PAIRS) continue;
    const QkvPair qp = qkv_pair(p);
    const float inv = NORM && !kNormInSums ? sh.inv()[t] : 1.0f;
    qkv_pair_out(args, qp, t0 + t, out[t][2 * pl] * inv, out[t][2 * pl + 1] * inv);
  }
}

// The same bias, rotation and store for q, k and v multiplied already (the
// dense GEMM of a prompt step, dense_gemm_choice.h: uses_dense_gemm): args.x holds
// their rows [rows][2 QKV_PAIRS], q's N_HEAD * HEAD_DIM values, then k's, then
// v's. Grid: (max_rows); block 128.
RAYO_KERNEL RAYO_LAUNCH_BOUNDS(128) rope_store_rows(const QkvArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  const float* h = args.x + static_cast<long long>(t) * (2 * QKV_PAIRS);
  for (int p = threadIdx.x; p < QKV_PAIRS; p += blockDim.x) {
    const QkvPair qp = qkv_pair(p);
    const int base = qp.which == 0 ? 0 : qp.which == 1 ? N_HEAD * HEAD_DIM : (N_HEAD + N_HEAD_KV) * HEAD_DIM;
    qkv_pair_out(args, qp, t, h[base + qp.r0], h[base + qp.r1]);
  }
}
