// Incremental causal attention of each token row's query heads over the
// layer's f16 KV cache, split along the context (flash-decoding), so that a
// decode step at a long context spreads over N_HEAD_KV * splits blocks and
// reads the cache at the memory's bandwidth. Row t attends to positions
// lo..positions[t] (read from device memory, so a captured graph stays valid),
// lo = 0, or positions[t] - WINDOW + 1 on a sliding-window layer.
//
// attention_split: block (g, s, t) handles the G = N_HEAD / N_HEAD_KV query
// heads of kv head g (grouped-query attention: each key and value is read once
// for the group) of row t, over positions [s*CHUNK, (s+1)*CHUNK) that are in
// lo..positions[t]. Splits outside exit at once; so the launch shape depends
// only on the context length.
//   per sub-tile of up to ATT_SUB positions (the whole split but for chunks
//   longer than 8192 / G, which so cost no more shared memory):
//   1. scores: TPP threads per position each load EPT halves of its key (one
//      16-byte load for EPT = 8) and dot them with the G queries; the partial
//      dots are summed across the TPP threads by shuffles; PPP positions per
//      pass, all loads of a pass in flight together;
//   2. a softmax per head over the sub-tile (max, exp, sum), in shared
//      memory, against the running max of the sub-tiles before (whose sums
//      are scaled by exp(old max - new max));
//   3. the values: the same threads load the positions' values and accumulate
//      p * v for the G heads.
//   Then the position groups are summed by shuffles within a warp, then
//   across the warps in shared memory.
//   It writes the partial result (m = max score, l = sum of exp(score - m),
//   o[HEAD_DIM] = sum of exp(score - m) * v) of each head to `partial`.
//   A row with one split (fewer than CHUNK positions in view, or all in one
//   chunk) writes its outputs from these sums at once, as step 4 would.
//   4. the merge of the row's n = positions[t] / CHUNK - lo / CHUNK + 1
//      splits of kv head g (counters per (row, kv head), counted after a memory
//      fence, and set back to 0 by the last block to arrive): with n up to
//      MERGE_GROUP, the last split to finish merges them all; with more, the
//      last of each group of MERGE_GROUP splits merges its group into the
//      group's first partial, and the last group to finish merges the groups'.
//      Each merge reads its partials once, 16 bytes a load, all the block's
//      threads at once (merge_partials). The last writes the G heads'
//      outputs, and with EMIT_Q8 their q8 twin (q8_act.cuh; HEAD_DIM % 32 ==
//      0: a head's blocks of 32 columns are its own). So a layer's attention
//      is one launch.
//
// Shape macros: HEAD_DIM (a multiple of 2, up to 256), N_HEAD, N_HEAD_KV,
// CHUNK, N_SPLITS (= ceil(max_seq_len / CHUNK)), MERGE_GROUP (splits per
// merge group, at least 2), SCALE (the scores' factor,
// 1/sqrt(HEAD_DIM) but for Gemma 3 27B, as a float literal), WINDOW (positions
// a sliding-window layer sees; 0 or absent: all), BLOCK_SIZE (positions per KV cache block), EMIT_Q8, FLASH
// (1: the rows of one-sequence tiles are attention_prefill.cu's, launched
// beside this one, and skipped here).
// Layouts: q and out [rows][N_HEAD * HEAD_DIM] f32; caches [cache rows][N_HEAD_KV
// * HEAD_DIM] f16, paged: position j of row t's sequence is cache row
// kv_row(block_table, seq[t], *max_blocks, j, BLOCK_SIZE); partial
// [rows][N_HEAD][N_SPLITS][PART] f32 (o[HEAD_DIM], m, l, padding); counters
// [rows][N_HEAD_KV][MERGE_COUNTERS] ints, zero between steps.
// Grid: (N_HEAD_KV, N_SPLITS, max_rows); block ATT_THREADS.
//
// Last measured (H100, 2026-11-28, docs/gpu-log.md): llama3-8b Q4_K_M tg128
// 382.9 t/s at depth 0, 329.2 at depth 4096 (llama.cpp 258.0 and 240.8);
// compute-sanitizer racecheck clean. `rayo bench -d` measures it.
#include "q8_act.cuh"

#define ATT_THREADS 128
#ifndef RING_BLOCKS
#define RING_BLOCKS 0  // a sliding-window layer's ring of cache blocks per sequence (kv_row, common.cuh)
#endif
#ifndef WINDOW
#define WINDOW 0
#endif
#define ATT_WARPS (ATT_THREADS / WARP)
#define KV_WIDTH (N_HEAD_KV * HEAD_DIM)
// A partial result: HEAD_DIM sums, the max and the sum of exponentials, padded
// to a multiple of 4 floats (attention_partial_floats, kernel_specs.h).
#define PART ((HEAD_DIM + 2 + 3) / 4 * 4)
// Counters per (row, kv head): the merge's, then one per group of MERGE_GROUP
// splits (attention_merge_counters, kernel_specs.h).
#define MERGE_COUNTERS (1 + (N_SPLITS + MERGE_GROUP - 1) / MERGE_GROUP)
#define GQA (N_HEAD / N_HEAD_KV)
// Halves per load: 8 (16 bytes) when the head allows, else 4 or 2.
#define EPT (HEAD_DIM % 8 == 0 ? 8 : HEAD_DIM % 4 == 0 ? 4 : 2)
// Threads per position (TPP, rounded up to a power of two: TPP2) and positions per pass.
#define TPP (HEAD_DIM / EPT)
#define TPP2 (TPP <= 1 ? 1 : TPP <= 2 ? 2 : TPP <= 4 ? 4 : TPP <= 8 ? 8 : TPP <= 16 ? 16 : 32)
#define PPP (ATT_THREADS / TPP2)
// Positions a block scores at a time (its score rows in shared memory, at
// most 32 KB): a longer chunk goes in sub-tiles, with a running max and sum.
// (Tests set a smaller one, so that short chunks take several sub-tiles.)
#ifndef ATT_SUB
#define ATT_SUB (CHUNK < 8192 / GQA ? CHUNK : 8192 / GQA)
#endif
static_assert(ATT_SUB <= CHUNK, "a sub-tile within the chunk");

static_assert(HEAD_DIM % 2 == 0 && HEAD_DIM <= 256, "head_dim: even, at most 256");
static_assert(N_HEAD % N_HEAD_KV == 0, "query heads: a multiple of the kv heads");
static_assert(MERGE_GROUP >= 2, "merge groups of at least two splits");

// EPT halves at p (aligned to 2 * EPT bytes) as floats.
__device__ __forceinline__ void load_halves(const u16* p, float* v) {
  if constexpr (EPT == 8) {
    const uint4 w = *reinterpret_cast<const uint4*>(p);
    const u32 words[4] = {w.x, w.y, w.z, w.w};
RAYO_UNROLL
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = h2f(static_cast<u16>(words[i]));
      v[2 * i + 1] = h2f(static_cast<u16>(words[i] >> 16));
    }
  } else if constexpr (EPT == 4) {
    const uint2 w = *reinterpret_cast<const uint2*>(p);
    v[0] = h2f(static_cast<u16>(w.x));
    v[1] = h2f(static_cast<u16>(w.x >> 16));
    v[2] = h2f(static_cast<u16>(w.y));
    v[3] = h2f(static_cast<u16>(w.y >> 16));
  } else {
    const u32 w = *reinterpret_cast<const u32*>(p);
    v[0] = h2f(static_cast<u16>(w));
    v[1] = h2f(static_cast<u16>(w >> 16));
  }
}

// Head h's partials (of kv head g's group) of row t: split s at s * PART.
__device__ __forceinline__ const float* head_partials(const float* partial, int t, int g, int h) {
  return partial + (static_cast<long long>(t) * N_HEAD + g * GQA + h) * N_SPLITS * PART;
}

// Thread tid's share of the G heads' outputs: x = tid, tid + ATT_THREADS, ...
// of the G * HEAD_DIM.
#define ATT_PER_THREAD ((GQA * HEAD_DIM + ATT_THREADS - 1) / ATT_THREADS)

// Writes the G heads of kv head g of row t, o[i] * inv_l[head] for this
// thread's outputs (ATT_PER_THREAD), into `out` and with EMIT_Q8 its q8 twin.
// Every thread of the block calls it (inv_l in shared memory, written).
__device__ __forceinline__ void write_group(const float (&o)[ATT_PER_THREAD], const float* inv_l, float* out,
                                            i8* out_q, float2* out_ds, int g, int t) {
  const int tid = threadIdx.x, warp = tid / WARP, lane = tid % WARP;
  float* row = out + static_cast<long long>(t) * (N_HEAD * HEAD_DIM);
RAYO_UNROLL
  for (int i = 0; i < ATT_PER_THREAD; ++i) {
    const int x = tid + i * ATT_THREADS;
    if (x < GQA * HEAD_DIM) row[g * GQA * HEAD_DIM + x] = o[i] * inv_l[x / HEAD_DIM];
  }
  if (EMIT_Q8) {
    __syncthreads();
    const TwinRow twin = twin_row<N_HEAD * HEAD_DIM>(out_q, out_ds, nullptr, t);
    constexpr int kBlocks = GQA * HEAD_DIM / 32;  // the group's blocks of 32 columns
    for (int b = warp; b < kBlocks; b += ATT_WARPS)
      emit_block32<false>(row[g * GQA * HEAD_DIM + 32 * b + lane], 0.0f, g * kBlocks + b, twin.q, twin.ds, nullptr);
  }
}

// The G heads' outputs from their sums: sums[h][d] / sum_exp[h], written as
// write_group does. Every thread of the block calls it (both in shared memory,
// written).
__device__ __forceinline__ void write_sums(const float (*sums)[HEAD_DIM], const float* sum_exp, float* out, i8* out_q,
                                           float2* out_ds, int g, int t) {
  __shared__ float inv_l[GQA];
  const int tid = threadIdx.x;
  for (int h = tid; h < GQA; h += ATT_THREADS) inv_l[h] = 1.0f / sum_exp[h];
  float o[ATT_PER_THREAD];
RAYO_UNROLL
  for (int i = 0; i < ATT_PER_THREAD; ++i) {
    const int x = tid + i * ATT_THREADS;
    o[i] = x < GQA * HEAD_DIM ? sums[x / HEAD_DIM][x % HEAD_DIM] : 0.0f;
  }
  __syncthreads();
  write_group(o, inv_l, out, out_q, out_ds, g, t);
}

// Whether this block is the last of `expected` to arrive at `counter` (which
// that block sets back to 0 for the next step). What the block wrote before is
// visible to the last one's reads after it (fences on both sides). Uniform
// across the block.
__device__ __forceinline__ bool arrive_last(int* counter, int expected) {
  __shared__ int last;
  __threadfence();  // this block's writes, visible before it is counted
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1) == expected - 1;
    if (last) *counter = 0;
  }
  __syncthreads();
  const bool is_last = last;
  if (is_last) __threadfence();
  return is_last;
}

// The merge reads a partial's sums MERGE_VEC floats at a time (16 bytes when
// the head allows: PART is a multiple of 4).
#define MERGE_VEC (HEAD_DIM % 4 == 0 ? 4 : 2)
#define MERGE_VECS (GQA * HEAD_DIM / MERGE_VEC)  // vectors of a group's partial
// Threads per vector (MERGE_LANES, each taking every MERGE_LANES-th partial)
// when the vectors are fewer than the threads; else vectors per thread.
#define MERGE_LANES (MERGE_VECS >= ATT_THREADS ? 1 : ATT_THREADS / MERGE_VECS)
#define MERGE_VPT ((MERGE_VECS + ATT_THREADS - 1) / ATT_THREADS)
// Partials a thread has in flight per vector: about 8 loads of 16 bytes.
#define MERGE_BATCH (MERGE_VPT >= 8 ? 1 : 8 / MERGE_VPT)

__device__ __forceinline__ void load_sums(const float* p, float* v) {
  if constexpr (MERGE_VEC == 4) {
    const float4 w = __ldcg(reinterpret_cast<const float4*>(p));
    v[0] = w.x, v[1] = w.y, v[2] = w.z, v[3] = w.w;
  } else {
    const float2 w = __ldcg(reinterpret_cast<const float2*>(p));
    v[0] = w.x, v[1] = w.y;
  }
}

// The G heads of kv head g of row t over n partials, the i-th at split
// first + i * stride (read past L1: other blocks wrote them): each head's
// largest max M (head_m), its sum of exponentials L = sum l_i exp(m_i - M)
// (head_l), and its sums[h][d] = sum o_i[d] exp(m_i - M). Every partial is
// read once, 16 bytes a load, by all the block's threads at once: a vector of
// the sums per thread (or MERGE_LANES threads per vector, each taking every
// MERGE_LANES-th partial, summed in order through shared memory), about 8
// partials in flight per thread. Every thread of the block calls it.
__device__ __forceinline__ void merge_partials(const float* partial, int t, int g, int first, int stride, int n,
                                               float (*sums)[HEAD_DIM], float* head_m, float* head_l) {
  const int tid = threadIdx.x, warp = tid / WARP, lane = tid % WARP;
  // 1. M and L of each head, one warp per head, each lane keeping its own
  //    (m, l) of every 32nd partial, then combined across the lanes.
  for (int h = warp; h < GQA; h += ATT_WARPS) {
    const float* p = head_partials(partial, t, g, h) + HEAD_DIM;
    float m = -INFINITY, l = 0.0f;
RAYO_UNROLL_4
    for (int i = lane; i < n; i += WARP) {
      const float2 ml = __ldcg(reinterpret_cast<const float2*>(p + static_cast<long long>(first + i * stride) * PART));
      const float mx = fmaxf(m, ml.x);
      l = l * expf(m - mx) + ml.y * expf(ml.x - mx);  // m = -inf only while l = 0
      m = mx;
    }
RAYO_UNROLL
    for (int o = WARP / 2; o > 0; o >>= 1) {
      const float m2 = __shfl_xor_sync(FULL_MASK, m, o), l2 = __shfl_xor_sync(FULL_MASK, l, o);
      const float mx = fmaxf(m, m2);
      l = (l == 0.0f ? 0.0f : l * expf(m - mx)) + (l2 == 0.0f ? 0.0f : l2 * expf(m2 - mx));
      m = mx;
    }
    if (lane == 0) {
      head_m[h] = m;
      head_l[h] = l;
    }
  }
  __syncthreads();
  // 2. The sums, weighted by exp(m_i - M).
  const int j = tid / (MERGE_LANES > 1 ? MERGE_VECS : ATT_THREADS);  // this thread's lane of its vectors
  float acc[MERGE_VPT][MERGE_VEC];
RAYO_UNROLL
  for (int k = 0; k < MERGE_VPT; ++k)
RAYO_UNROLL
    for (int c = 0; c < MERGE_VEC; ++c) acc[k][c] = 0.0f;
  if (j < MERGE_LANES) {
    for (int i0 = j; i0 < n; i0 += MERGE_LANES * MERGE_BATCH) {
      float v[MERGE_BATCH][MERGE_VPT][MERGE_VEC], w[MERGE_BATCH][MERGE_VPT];
RAYO_UNROLL
      for (int b = 0; b < MERGE_BATCH; ++b) {
        const int i = i0 + b * MERGE_LANES;
RAYO_UNROLL
        for (int k = 0; k < MERGE_VPT; ++k) {
          const int x = ((MERGE_LANES > 1 ? tid % MERGE_VECS : tid) + k * ATT_THREADS) * MERGE_VEC;
          if (i < n && x < GQA * HEAD_DIM) {
            const float* p = head_partials(partial, t, g, x / HEAD_DIM) + static_cast<long long>(first + i * stride) * PART;
            load_sums(p + x % HEAD_DIM, v[b][k]);
            w[b][k] = __ldcg(p + HEAD_DIM);
          }
        }
      }
RAYO_UNROLL
      for (int b = 0; b < MERGE_BATCH; ++b) {
        if (i0 + b * MERGE_LANES >= n) break;
RAYO_UNROLL
        for (int k = 0; k < MERGE_VPT; ++k) {
          const int x = ((MERGE_LANES > 1 ? tid % MERGE_VECS : tid) + k * ATT_THREADS) * MERGE_VEC;
          if (x < GQA * HEAD_DIM) {
            const float e = expf(w[b][k] - head_m[x / HEAD_DIM]);
RAYO_UNROLL
            for (int c = 0; c < MERGE_VEC; ++c) acc[k][c] += v[b][k][c] * e;
          }
        }
      }
    }
  }
  // 3. The lanes of each vector summed in order into `sums`.
  for (int lj = 0; lj < MERGE_LANES; ++lj) {
    if (j == lj) {
RAYO_UNROLL
      for (int k = 0; k < MERGE_VPT; ++k) {
        const int x = ((MERGE_LANES > 1 ? tid % MERGE_VECS : tid) + k * ATT_THREADS) * MERGE_VEC;
        if (x < GQA * HEAD_DIM)
RAYO_UNROLL
          for (int c = 0; c < MERGE_VEC; ++c)
            sums[x / HEAD_DIM][x % HEAD_DIM + c] = (lj == 0 ? 0.0f : sums[x / HEAD_DIM][x % HEAD_DIM + c]) + acc[k][c];
      }
    }
    __syncthreads();
  }
}

// Writes the G heads' merged sums, max and sum of exponentials (shared memory)
// as the partial of split s of row t, the form merge_partials reads.
__device__ __forceinline__ void store_partial(float* partial, const float (*sums)[HEAD_DIM], const float* head_m,
                                              const float* head_l, int g, int t, int s) {
  for (int x = threadIdx.x; x < GQA * HEAD_DIM; x += ATT_THREADS) {
    const int h = x / HEAD_DIM, d = x % HEAD_DIM;
    float* part = partial + ((static_cast<long long>(t) * N_HEAD + g * GQA + h) * N_SPLITS + s) * PART;
    part[d] = sums[h][d];
    if (d == 0) {
      part[HEAD_DIM] = head_m[h];
      part[HEAD_DIM + 1] = head_l[h];
    }
  }
}

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(ATT_THREADS)
attention(const AttentionArgs args) {
  grid_dependency_wait();
  const int g = blockIdx.x, s = blockIdx.y, t = blockIdx.z;
  if (t >= *args.n_rows) return;
  // attention_prefill.cu's row:
  if (FLASH && fa_tile_here(args.kv.seq, t / FA_TOKENS * FA_TOKENS, *args.n_rows)) return;
  const int pos = args.kv.positions[t];
  const int lo = WINDOW > 0 && pos >= WINDOW ? pos - WINDOW + 1 : 0;  // the first position the row sees
  const int begin = s * CHUNK;
  if (begin > pos || begin + CHUNK <= lo) return;
  const int first = begin > lo ? begin : lo;                           // this split's first position
  const int n = (begin + CHUNK < pos + 1 ? begin + CHUNK : pos + 1) - first;  // and its count
  const int tid = threadIdx.x, warp = tid / WARP, lane = tid % WARP;
  const int e = tid % TPP2, pg = tid / TPP2;  // slice of the head, position group
  const bool active = e < TPP;
  const int* table = args.kv.block_table + args.kv.seq[t] * *args.kv.max_blocks;
  const long long head_off = static_cast<long long>(g) * HEAD_DIM + e * EPT;

  __shared__ float scores[GQA][ATT_SUB];
  __shared__ float red[GQA][HEAD_DIM];
  __shared__ float head_m[GQA], head_l[GQA], head_scale[GQA];
  // Passes per round of loads: their loads are all in flight before any is used.
  constexpr int kUnroll = 4;

  float qv[GQA][EPT];
RAYO_UNROLL
  for (int h = 0; h < GQA; ++h)
RAYO_UNROLL
    for (int i = 0; i < EPT; ++i)
      qv[h][i] =
          active
              ? args.q[static_cast<long long>(t) * (N_HEAD * HEAD_DIM) + (g * GQA + h) * HEAD_DIM + e * EPT + i] * SCALE
              : 0.0f;
  float acc[GQA][EPT];
RAYO_UNROLL
  for (int h = 0; h < GQA; ++h)
RAYO_UNROLL
    for (int i = 0; i < EPT; ++i) acc[h][i] = 0.0f;
  for (int h = tid; h < GQA; h += ATT_THREADS) {
    head_m[h] = -INFINITY;
    head_l[h] = 0.0f;
  }
  // The split's positions, ATT_SUB at a time: one pass when the chunk fits
  // the score rows (a trip count known at compile time, so that the queries'
  // registers are free before the values are summed, as without the loop;
  // the running max and sum then reduce to the split's own).
  constexpr int kSubTiles = (CHUNK + ATT_SUB - 1) / ATT_SUB;
  for (int sub = 0; sub < kSubTiles; ++sub) {
    const int s0 = sub * ATT_SUB;
    if (s0 >= n) break;
    const int ns = n - s0 < ATT_SUB ? n - s0 : ATT_SUB;
    const int at = first + s0;  // the sub-tile's first position
    __syncthreads();  // the previous sub-tile's weights are used; head_m/l are set
    // 1. Scores of the G heads (queries pre-scaled), PPP positions per pass.
    for (int j0 = 0; j0 < ns; j0 += PPP * kUnroll) {
      float kv[kUnroll][EPT];
RAYO_UNROLL
      for (int u = 0; u < kUnroll; ++u) {
        const int j = j0 + u * PPP + pg;
RAYO_UNROLL
        for (int i = 0; i < EPT; ++i) kv[u][i] = 0.0f;
        if (active && j < ns)
          load_halves(args.k_cache + kv_row(table, 0, 0, at + j, BLOCK_SIZE, RING_BLOCKS) * KV_WIDTH + head_off,
                      kv[u]);
      }
RAYO_UNROLL
      for (int u = 0; u < kUnroll; ++u) {
        const int j = j0 + u * PPP + pg;
RAYO_UNROLL
        for (int h = 0; h < GQA; ++h) {
          float d = 0.0f;
RAYO_UNROLL
          for (int i = 0; i < EPT; ++i) d += qv[h][i] * kv[u][i];
RAYO_UNROLL
          for (int o = TPP2 / 2; o > 0; o >>= 1) d += __shfl_xor_sync(FULL_MASK, d, o);
          if (e == 0 && j < ns) scores[h][j] = d;
        }
      }
    }
    __syncthreads();

    // 2. Softmax over the sub-tile, one warp per head, against the running max
    //    M: the weights exp(score - M'), M' = max(M, the sub-tile's), and the
    //    factor exp(M - M') for what was summed before (0 at the first).
    for (int h = warp; h < GQA; h += ATT_WARPS) {
      float m = head_m[h];
      for (int j = lane; j < ns; j += WARP) m = fmaxf(m, scores[h][j]);
      m = warp_max(m);
      float l = 0.0f;
      for (int j = lane; j < ns; j += WARP) {
        const float p = expf(scores[h][j] - m);
        scores[h][j] = p;
        l += p;
      }
      l = warp_sum(l);
      if (lane == 0) {
        const float rescale = expf(head_m[h] - m);
        head_scale[h] = rescale;
        head_l[h] = head_l[h] * rescale + l;
        head_m[h] = m;
      }
    }
    __syncthreads();

    // 3. The values, weighted: position group pg takes positions pg, pg + PPP, ...
RAYO_UNROLL
    for (int h = 0; h < GQA; ++h) {
      const float rescale = head_scale[h];
RAYO_UNROLL
      for (int i = 0; i < EPT; ++i) acc[h][i] *= rescale;
    }
    if (active) {
      for (int j0 = pg; j0 < ns; j0 += PPP * kUnroll) {
        float vv[kUnroll][EPT];
RAYO_UNROLL
        for (int u = 0; u < kUnroll; ++u) {
          const int j = j0 + u * PPP;
          if (j < ns)
            load_halves(args.v_cache + kv_row(table, 0, 0, at + j, BLOCK_SIZE, RING_BLOCKS) * KV_WIDTH + head_off,
                        vv[u]);
        }
RAYO_UNROLL
        for (int u = 0; u < kUnroll; ++u) {
          const int j = j0 + u * PPP;
          if (j >= ns) break;
RAYO_UNROLL
          for (int h = 0; h < GQA; ++h) {
            const float p = scores[h][j];
RAYO_UNROLL
            for (int i = 0; i < EPT; ++i) acc[h][i] += p * vv[u][i];
          }
        }
      }
    }
  }
  // Sum the position groups of a warp (lanes with the same e) by shuffles, then
  // the warps in order, through shared memory.
RAYO_UNROLL
  for (int h = 0; h < GQA; ++h)
RAYO_UNROLL
    for (int i = 0; i < EPT; ++i)
RAYO_UNROLL
      for (int o = TPP2; o < WARP; o <<= 1) acc[h][i] += __shfl_xor_sync(FULL_MASK, acc[h][i], o);
  for (int w = 0; w < ATT_WARPS; ++w) {
    if (warp == w && lane < TPP2 && active) {
RAYO_UNROLL
      for (int h = 0; h < GQA; ++h)
RAYO_UNROLL
        for (int i = 0; i < EPT; ++i) red[h][e * EPT + i] = (w == 0 ? 0.0f : red[h][e * EPT + i]) + acc[h][i];
    }
    __syncthreads();
  }
  const int s_lo = lo / CHUNK, n_splits = pos / CHUNK + 1 - s_lo;
  if (n_splits == 1) {
    // The row's only split: its sums are the heads' outputs, as the merge of
    // one split gives them (weight exp(m - m) = 1, the same 1 / l), written
    // without the partials' round trip through memory, the fence and the
    // counter: a decode step's attention below CHUNK positions is a chain of
    // dependent memory round trips, ~12 us a layer on an H100 at 2 positions.
    write_sums(red, head_l, args.out, args.out_q, args.out_ds, g, t);
    return;
  }
  store_partial(args.partial, red, head_m, head_l, g, t, s);

  // 4. The merge. Up to MERGE_GROUP splits: the last of them to finish merges
  //    them all. More: the last of each group of MERGE_GROUP merges its group
  //    into the group's first split's partial, and the last group to finish
  //    merges the groups', so that the merges run side by side and none reads
  //    more than max(MERGE_GROUP, groups) partials.
  int* counters = args.counters + (static_cast<long long>(t) * N_HEAD_KV + g) * MERGE_COUNTERS;
  if (n_splits <= MERGE_GROUP) {
    if (!arrive_last(counters, n_splits)) return;
    merge_partials(args.partial, t, g, s_lo, 1, n_splits, red, head_m, head_l);
  } else {
    const int group = (s - s_lo) / MERGE_GROUP, first = s_lo + group * MERGE_GROUP;
    const int in_group = n_splits - group * MERGE_GROUP < MERGE_GROUP ? n_splits - group * MERGE_GROUP : MERGE_GROUP;
    if (!arrive_last(counters + 1 + group, in_group)) return;
    if (in_group > 1) {  // a group of one split: its partial is the group's
      merge_partials(args.partial, t, g, first, 1, in_group, red, head_m, head_l);
      store_partial(args.partial, red, head_m, head_l, g, t, first);
    }
    const int groups = (n_splits + MERGE_GROUP - 1) / MERGE_GROUP;
    if (!arrive_last(counters, groups)) return;
    merge_partials(args.partial, t, g, s_lo, MERGE_GROUP, groups, red, head_m, head_l);
  }
  write_sums(red, head_l, args.out, args.out_q, args.out_ds, g, t);
}
