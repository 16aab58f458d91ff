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
// for the store; block 128.
#include "common.cuh"

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
