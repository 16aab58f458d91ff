// Incremental causal attention of each token row's query heads over the
// layer's f16 KV cache (flash-decoding). Row t attends to positions
// 0..positions[t] (read from device memory, so a captured graph stays valid).
//
// attention_split: block (h, s, t) handles query head h of row t over the
// positions [s*CHUNK, (s+1)*CHUNK) that are <= positions[t], with an online
// softmax, and writes the partial result (m = max score, l = sum of
// exp(score - m), o[HEAD_DIM] = sum of exp(score - m) * v) to `partial`.
// Splits past the row's position exit at once; so the launch shape depends
// only on n_ctx, and long contexts spread over N_SPLITS * N_HEAD blocks.
// attention_combine: block (h, t) merges the positions[t] / CHUNK + 1 partials.
//
// GQA: query head h reads kv head h / (N_HEAD / N_HEAD_KV).
// Shape macros: HEAD_DIM (any value up to 256), N_HEAD, N_HEAD_KV, CHUNK,
// N_SPLITS (= ceil(max_seq_len / CHUNK)), SCALE (1/sqrt(HEAD_DIM) as a float
// literal), BLOCK_SIZE (positions per KV cache block).
// Layouts: q and out [rows][N_HEAD * HEAD_DIM] f32; caches [cache rows][N_HEAD_KV
// * HEAD_DIM] f16, paged: position j of row t's sequence is cache row
// kv_row(block_table, seq[t], *max_blocks, j, BLOCK_SIZE); partial
// [rows][N_HEAD][N_SPLITS][HEAD_DIM + 2] f32.
#include "common.cuh"

#define ATT_WARPS 4
#define ATT_THREADS (ATT_WARPS * WARP)
#define DPL ((HEAD_DIM + WARP - 1) / WARP)  // dims per lane: lane l holds dims l, l+32, ...
#define KV_WIDTH (N_HEAD_KV * HEAD_DIM)
#define PART (HEAD_DIM + 2)

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(ATT_THREADS)
attention_split(const float* q, const u16* k_cache, const u16* v_cache, float* partial, const int* positions,
                const int* seq, const int* block_table, const int* max_blocks, const int* n_rows) {
  const int h = blockIdx.x, s = blockIdx.y, t = blockIdx.z;
  if (t >= *n_rows) return;
  const int pos = positions[t];
  const int begin = s * CHUNK;
  if (begin > pos) return;
  const int end = begin + CHUNK < pos + 1 ? begin + CHUNK : pos + 1;
  const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
  const int kv_off = (h / (N_HEAD / N_HEAD_KV)) * HEAD_DIM;
  const int* table = block_table + seq[t] * *max_blocks;

  float qr[DPL], acc[DPL];
RAYO_UNROLL
  for (int i = 0; i < DPL; ++i) {
    const int d = lane + WARP * i;
    qr[i] = d < HEAD_DIM ? q[t * (N_HEAD * HEAD_DIM) + h * HEAD_DIM + d] : 0.0f;
    acc[i] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (int j = begin + warp; j < end; j += ATT_WARPS) {
    const long long row = static_cast<long long>(table[j / BLOCK_SIZE]) * BLOCK_SIZE + j % BLOCK_SIZE;
    const u16* kr = k_cache + row * KV_WIDTH + kv_off;
    float dot = 0.0f;
RAYO_UNROLL
    for (int i = 0; i < DPL; ++i) {
      const int d = lane + WARP * i;
      if (d < HEAD_DIM) dot += qr[i] * h2f(kr[d]);
    }
    const float score = warp_sum(dot) * SCALE;
    const float m_new = fmaxf(m, score);
    const float corr = expf(m - m_new);
    const float p = expf(score - m_new);
    l = l * corr + p;
    const u16* vr = v_cache + row * KV_WIDTH + kv_off;
RAYO_UNROLL
    for (int i = 0; i < DPL; ++i) {
      const int d = lane + WARP * i;
      acc[i] = acc[i] * corr + (d < HEAD_DIM ? p * h2f(vr[d]) : 0.0f);
    }
    m = m_new;
  }

  // Merge the warps' partial softmaxes.
  __shared__ float sm[ATT_WARPS], sl[ATT_WARPS];
  __shared__ float so[ATT_WARPS][DPL * WARP];
  if (lane == 0) {
    sm[warp] = m;
    sl[warp] = l;
  }
RAYO_UNROLL
  for (int i = 0; i < DPL; ++i) so[warp][lane + WARP * i] = acc[i];
  __syncthreads();
  float M = -INFINITY;
RAYO_UNROLL
  for (int w = 0; w < ATT_WARPS; ++w) M = fmaxf(M, sm[w]);
  float* out = partial + ((static_cast<long long>(t) * N_HEAD + h) * N_SPLITS + s) * PART;
  for (int d = threadIdx.x; d < HEAD_DIM + 1; d += ATT_THREADS) {
    float sum = 0.0f;
    for (int w = 0; w < ATT_WARPS; ++w) {
      if (sl[w] == 0.0f) continue;  // a warp that saw no position
      const float f = expf(sm[w] - M);
      sum += (d < HEAD_DIM ? so[w][d] : sl[w]) * f;
    }
    if (d < HEAD_DIM)
      out[2 + d] = sum;
    else
      out[1] = sum;
  }
  if (threadIdx.x == 0) out[0] = M;
}

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(128)
attention_combine(const float* partial, float* out, const int* positions, const int* n_rows) {
  const int h = blockIdx.x, t = blockIdx.y;
  if (t >= *n_rows) return;
  const int n_splits = positions[t] / CHUNK + 1;
  const float* p = partial + (static_cast<long long>(t) * N_HEAD + h) * N_SPLITS * PART;
  float M = -INFINITY;
  for (int s = 0; s < n_splits; ++s) M = fmaxf(M, p[s * PART]);
  float L = 0.0f;
  for (int s = 0; s < n_splits; ++s) L += p[s * PART + 1] * expf(p[s * PART] - M);
  const float inv = 1.0f / L;
  for (int d = threadIdx.x; d < HEAD_DIM; d += blockDim.x) {
    float o = 0.0f;
    for (int s = 0; s < n_splits; ++s) o += p[s * PART + 2 + d] * expf(p[s * PART] - M);
    out[t * (N_HEAD * HEAD_DIM) + h * HEAD_DIM + d] = o * inv;
  }
}
