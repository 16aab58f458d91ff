// The attention of encoder-decoder models (Whisper): an encoder's unmasked
// self-attention over the rows of its step (dense_attention), the store of the
// encoder's keys and values into each decoder layer's cross-attention memory
// (cross_kv_store), and a decoder row's attention over that memory
// (cross_attention). Arguments: kernel_args.cuh.
//
// A block per (row, head): the scaled query in shared memory, a warp per key
// for the scores (lanes over the head's values, coalesced), the softmax over
// the scores in shared memory, then a thread per value of the head summing
// over the keys. Scores and sums in float, as cpu dense attention.
// Shape macros: HEAD_DIM, N_HEAD (WIDTH = N_HEAD * HEAD_DIM), MAX_LEN (the most
// keys: the step's rows for dense_attention, CROSS_LEN for cross_attention),
// CROSS_LEN, SCALE. Grid: (max_rows, N_HEAD) for the attentions, (max_rows)
// for the store; block 128. dense_attention_tc, at the end, is the encoder's
// attention on tensor cores (its own grid).
#include "common.cuh"
#include "flash_tile.cuh"
#include "mma.cuh"

#define XA_THREADS 128
#define XA_WARPS (XA_THREADS / WARP)
#define WIDTH (N_HEAD * HEAD_DIM)

__device__ __forceinline__ float kv_value(const float* p) { return *p; }
__device__ __forceinline__ float kv_value(const u16* p) { return h2f(*p); }

// out[0 .. HEAD_DIM) = softmax(SCALE q k_j) v_j over the len keys at k, v
// (rows WIDTH apart, the head's values at each row's start).
template <typename KV>
__device__ __forceinline__ void attend(const float* q, const KV* k, const KV* v, int len, float* out) {
  __shared__ float s_q[HEAD_DIM];
  __shared__ float s_p[MAX_LEN];
  __shared__ float s_red[XA_WARPS];
  const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
  for (int d = threadIdx.x; d < HEAD_DIM; d += XA_THREADS) s_q[d] = q[d] * SCALE;
  __syncthreads();
  for (int j = warp; j < len; j += XA_WARPS) {
    const KV* kj = k + static_cast<long long>(j) * WIDTH;
    float acc = 0.0f;
    for (int d = lane; d < HEAD_DIM; d += WARP) acc += s_q[d] * kv_value(kj + d);
    acc = warp_sum(acc);
    if (lane == 0) s_p[j] = acc;
  }
  __syncthreads();
  float m = -INFINITY;
  for (int j = threadIdx.x; j < len; j += XA_THREADS) m = fmaxf(m, s_p[j]);
  m = warp_max(m);
  if (lane == 0) s_red[warp] = m;
  __syncthreads();
  m = s_red[0];
  for (int w = 1; w < XA_WARPS; ++w) m = fmaxf(m, s_red[w]);
  __syncthreads();  // s_red is reused below
  float sum = 0.0f;
  for (int j = threadIdx.x; j < len; j += XA_THREADS) {
    const float p = expf(s_p[j] - m);
    s_p[j] = p;
    sum += p;
  }
  sum = warp_sum(sum);
  if (lane == 0) s_red[warp] = sum;
  __syncthreads();
  sum = 0.0f;
  for (int w = 0; w < XA_WARPS; ++w) sum += s_red[w];
  const float inv = 1.0f / sum;
  for (int d = threadIdx.x; d < HEAD_DIM; d += XA_THREADS) {
    float acc = 0.0f;
    const KV* vd = v + d;
RAYO_UNROLL_4
    for (int j = 0; j < len; ++j, vd += WIDTH) acc += s_p[j] * kv_value(vd);
    out[d] = acc * inv;
  }
}

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(XA_THREADS) dense_attention(const DenseAttentionArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x, h = blockIdx.y;
  const int n = *args.n_rows;
  if (t >= n) return;
  // The run of rows of t's sequence (rows of a sequence are contiguous).
  int first = t, last = t;
  while (first > 0 && args.seq[first - 1] == args.seq[t]) --first;
  while (last + 1 < n && args.seq[last + 1] == args.seq[t]) ++last;
  const long long col = static_cast<long long>(h) * HEAD_DIM;
  attend(args.q + static_cast<long long>(t) * WIDTH + col, args.k + first * static_cast<long long>(WIDTH) + col,
         args.v + first * static_cast<long long>(WIDTH) + col, last - first + 1,
         args.out + static_cast<long long>(t) * WIDTH + col);
}

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(XA_THREADS) cross_kv_store(const CrossKvStoreArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  const long long row =
      (static_cast<long long>(args.cross_slot[args.seq[t]]) * CROSS_LEN + args.positions[t]) * WIDTH;
  for (int i = threadIdx.x; i < WIDTH; i += XA_THREADS) {
    args.k_mem[row + i] = f2h(args.k[static_cast<long long>(t) * WIDTH + i]);
    args.v_mem[row + i] = f2h(args.v[static_cast<long long>(t) * WIDTH + i]);
  }
}

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(XA_THREADS) cross_attention(const CrossAttentionArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x, h = blockIdx.y;
  if (t >= *args.n_rows) return;
  const long long base = static_cast<long long>(args.cross_slot[args.seq[t]]) * CROSS_LEN * WIDTH +
                         static_cast<long long>(h) * HEAD_DIM;
  attend(args.q + static_cast<long long>(t) * WIDTH + static_cast<long long>(h) * HEAD_DIM, args.k_mem + base,
         args.v_mem + base, CROSS_LEN, args.out + static_cast<long long>(t) * WIDTH + static_cast<long long>(h) * HEAD_DIM);
}

// dense_attention on tensor cores (flash attention, as attention_prefill.cu),
// for heads of a multiple of 16 values up to 128: block (tile of XT_ROWS
// rows, head h), warp w the tile's rows 16 w .. 16 w + 15. Per tile of
// XT_KEYS keys, from the start of the first row's sequence to the end of the
// last row's:
//   1. the block stages the keys and values as f16 in shared memory (from
//      the step's f32 rows), and each key's sequence;
//   2. each warp computes its 16 x XT_KEYS scores S = Q K^T on tensor cores
//      (Q scaled and rounded to f16 once), a row seeing only the keys of its
//      own sequence;
//   3. online softmax and O += P V on tensor cores (flash_tile.cuh's
//      flash_step, shared with attention_prefill.cu), P rounded to f16.
// Then O / l. The sums are float; Q, K, V and P are rounded to f16 (about
// 2^-11 each), where dense_attention keeps float throughout.
// Grid: (ceil(max_rows / XT_ROWS), N_HEAD); block XT_WARPS * 32.

#define XT_WARPS 4
#define XT_ROWS (16 * XT_WARPS)
#define XT_KEYS 32
#define XT_ROW (HEAD_DIM / 2 + 4)  // words (two halves) of a shared row, padded: 8 rows' fragment loads hit distinct banks

// The first row of the run of rows of t's sequence (rows of a sequence are
// contiguous: the rows between two of the same sequence are of it too).
__device__ __forceinline__ int xt_run_begin(const int* seq, int t) {
  const int s = seq[t];
  if (seq[0] == s) return 0;
  int lo = 0, hi = t;  // seq[lo] != s, seq[hi] == s
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (seq[mid] == s) hi = mid; else lo = mid;
  }
  return hi;
}
// One past the last row of the run of t's sequence among the n rows.
__device__ __forceinline__ int xt_run_end(const int* seq, int t, int n) {
  const int s = seq[t];
  if (seq[n - 1] == s) return n;
  int lo = t, hi = n - 1;  // seq[lo] == s, seq[hi] != s
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (seq[mid] == s) lo = mid; else hi = mid;
  }
  return hi;
}

// Every register a block may have (ptxas otherwise stops at 128 and spills).
RAYO_KERNEL RAYO_LAUNCH_BOUNDS_MIN(XT_WARPS * WARP, 1) dense_attention_tc(const DenseAttentionArgs args) {
  static_assert(HEAD_DIM % 16 == 0 && HEAD_DIM <= 128, "head_dim: a multiple of 16, at most 128");
  grid_dependency_wait();
  const int n = *args.n_rows;
  const int t0 = blockIdx.x * XT_ROWS, h = blockIdx.y;
  if (t0 >= n) return;
  const int tid = threadIdx.x, warp = tid / WARP, lane = tid % WARP;
  const int gr = lane / 4, tq = lane % 4;  // the fragments' row group and column pair (mma.cuh)
  __shared__ u32 ks[XT_KEYS][XT_ROW];
  __shared__ u32 vs[XT_KEYS][XT_ROW];
  __shared__ int kseq[XT_KEYS];
  __shared__ int key_begin, key_end;
  if (tid == 0) {
    const int last = (n - t0 < XT_ROWS ? n : t0 + XT_ROWS) - 1;
    key_begin = xt_run_begin(args.seq, t0);
    key_end = xt_run_end(args.seq, last, n);
  }
  // This lane's rows (fragment rows gr and gr + 8 of the warp's 16) and their sequences (-1: past the step).
  const int r_lo = t0 + 16 * warp + gr, r_hi = r_lo + 8;
  const int seq_lo = r_lo < n ? args.seq[r_lo] : -1, seq_hi = r_hi < n ? args.seq[r_hi] : -1;
  const long long col = static_cast<long long>(h) * HEAD_DIM;

  // Q of the lane's rows as A fragments, scaled, in f16.
  constexpr int kSteps = HEAD_DIM / 16;
  u32 qa[kSteps][4];
  {
    const float* q_lo = args.q + static_cast<long long>(r_lo) * WIDTH + col;
    const float* q_hi = args.q + static_cast<long long>(r_hi) * WIDTH + col;
    auto at = [&](const float* row, bool valid, int d) { return valid ? row[d] * SCALE : 0.0f; };
RAYO_UNROLL
    for (int s = 0; s < kSteps; ++s) {
      const int d0 = 16 * s + 2 * tq, d1 = d0 + 8;
      qa[s][0] = pack_half2(at(q_lo, seq_lo >= 0, d0), at(q_lo, seq_lo >= 0, d0 + 1));
      qa[s][1] = pack_half2(at(q_hi, seq_hi >= 0, d0), at(q_hi, seq_hi >= 0, d0 + 1));
      qa[s][2] = pack_half2(at(q_lo, seq_lo >= 0, d1), at(q_lo, seq_lo >= 0, d1 + 1));
      qa[s][3] = pack_half2(at(q_hi, seq_hi >= 0, d1), at(q_hi, seq_hi >= 0, d1 + 1));
    }
  }
  constexpr int kDimTiles = HEAD_DIM / 8;
  float o[kDimTiles][4];
RAYO_UNROLL
  for (int d = 0; d < kDimTiles; ++d)
RAYO_UNROLL
    for (int i = 0; i < 4; ++i) o[d][i] = 0.0f;
  FlashRows rows;
  __syncthreads();
  const int begin = key_begin, end = key_end;

  for (int k0 = begin; k0 < end; k0 += XT_KEYS) {
    // 1. The tile's keys and values as f16 (zeros past the end), and their sequences.
    __syncthreads();  // the previous tile's products are done with the stage
    constexpr int kGroups = HEAD_DIM / 8;
    for (int task = tid; task < XT_KEYS * kGroups; task += XT_WARPS * WARP) {
      const int j = task / kGroups, c = task % kGroups;
      uint4 kp = make_uint4(0, 0, 0, 0), vp = make_uint4(0, 0, 0, 0);
      if (k0 + j < end) {
        const long long at = static_cast<long long>(k0 + j) * WIDTH + col + 8 * c;
        const float4* kr = reinterpret_cast<const float4*>(args.k + at);
        const float4* vr = reinterpret_cast<const float4*>(args.v + at);
        const float4 ka = kr[0], kb = kr[1], va = vr[0], vb = vr[1];
        kp = make_uint4(pack_half2(ka.x, ka.y), pack_half2(ka.z, ka.w), pack_half2(kb.x, kb.y), pack_half2(kb.z, kb.w));
        vp = make_uint4(pack_half2(va.x, va.y), pack_half2(va.z, va.w), pack_half2(vb.x, vb.y), pack_half2(vb.z, vb.w));
      }
      *reinterpret_cast<uint4*>(&ks[j][4 * c]) = kp;
      *reinterpret_cast<uint4*>(&vs[j][4 * c]) = vp;
    }
    for (int j = tid; j < XT_KEYS; j += XT_WARPS * WARP) kseq[j] = k0 + j < end ? args.seq[k0 + j] : -2;
    __syncthreads();

    // 2. Scores: XT_KEYS / 8 tiles of 8 keys, K as the B fragments (B[k][n] = K[n][k]).
    float s[XT_KEYS / 8][4];
RAYO_UNROLL
    for (int nj = 0; nj < XT_KEYS / 8; ++nj) {
RAYO_UNROLL
      for (int i = 0; i < 4; ++i) s[nj][i] = 0.0f;
      const u32* krow = ks[8 * nj + gr];
RAYO_UNROLL
      for (int st = 0; st < kSteps; ++st) {
        const u32 b[2] = {krow[8 * st + tq], krow[8 * st + 4 + tq]};
        mma_16816(s[nj], qa[st], b);
      }
    }
    // A row sees the keys of its own sequence.
RAYO_UNROLL
    for (int nj = 0; nj < XT_KEYS / 8; ++nj)
RAYO_UNROLL
      for (int i = 0; i < 4; ++i)
        if (kseq[8 * nj + 2 * tq + (i & 1)] != (i >= 2 ? seq_hi : seq_lo)) s[nj][i] = -INFINITY;
    // 3. Online softmax and P V (flash_tile.cuh).
    flash_step<XT_KEYS>(s, vs, gr, tq, rows, o);
  }

  // O / l: rows gr and gr + 8 of the warp, columns 8d + 2tq, + 1.
  const float inv_lo = rows.l_lo > 0.0f ? 1.0f / rows.l_lo : 0.0f, inv_hi = rows.l_hi > 0.0f ? 1.0f / rows.l_hi : 0.0f;
  float* out_lo = args.out + static_cast<long long>(r_lo) * WIDTH + col;
  float* out_hi = args.out + static_cast<long long>(r_hi) * WIDTH + col;
RAYO_UNROLL
  for (int d = 0; d < kDimTiles; ++d) {
    const int c = 8 * d + 2 * tq;
    if (seq_lo >= 0) {
      out_lo[c] = o[d][0] * inv_lo;
      out_lo[c + 1] = o[d][1] * inv_lo;
    }
    if (seq_hi >= 0) {
      out_hi[c] = o[d][2] * inv_hi;
      out_hi[c + 1] = o[d][3] * inv_hi;
    }
  }
}
