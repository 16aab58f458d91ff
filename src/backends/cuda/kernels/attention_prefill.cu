// Causal attention of a prompt's tokens on tensor cores (flash attention):
// the tokens of a step come in tiles of FA_TOKENS (16) consecutive rows; a
// tile whose rows all belong to one sequence (a prompt, or a chunk of one,
// against its cached prefix) is done here, any other row by attention.cu,
// which skips the rows done here (fa_tile_here, common to both).
//
// Block (g, tile): kv head g for the tile's 16 tokens; warp w is query head
// g * GQA + w, so every key and value is read once for the group. Per tile of
// FA_KEYS (32) key positions, up to the largest position among the tokens:
//   1. the block copies the positions' keys and values (f16, paged) to one of
//      two stages in shared memory with cp.async (async_copy.cuh), one tile
//      ahead: tile i + 1's copies are in flight while tile i is multiplied;
//      positions past the largest are zeros;
//   2. each warp computes its 16 x 32 scores S = Q K^T on tensor cores
//      (mma.cuh: Q pre-scaled and rounded to f16 once, before the loop),
//      masks the positions past each token's own (causality; a token of a
//      chunk sees the whole cached prefix and the chunk up to itself) and,
//      on a sliding-window layer, those before its window;
//   3. updates each row's running max m and sum l (online softmax), rescales
//      its output accumulators by exp(m_old - m_new), and adds P V on tensor
//      cores, P = exp(S - m) rounded to f16, taken straight from the score
//      accumulators as the A fragments of the next product.
// Then O / l is written for the tile's rows, and with EMIT_Q8 its q8 twin.
//
// Shape macros: HEAD_DIM (a multiple of 16, at most 128: the output
// accumulators, HEAD_DIM / 2 floats a lane, stay in registers), N_HEAD,
// N_HEAD_KV, SCALE, BLOCK_SIZE, EMIT_Q8 (then HEAD_DIM % 32 == 0), WINDOW
// (as attention.cu: positions a sliding-window layer sees; 0 or absent: all).
// Layouts as attention.cu: q and out [rows][N_HEAD * HEAD_DIM] f32, caches
// [cache rows][N_HEAD_KV * HEAD_DIM] f16, paged through block_table.
// Grid: (N_HEAD_KV, ceil(max_rows / FA_TOKENS)); block GQA * 32 threads.
//
// Last measured (H100, 2026-11-28, docs/gpu-log.md): within llama3-8b Q4_K_M's
// pp512, 5 770 t/s at depth 0 and 4 937 at depth 4096 (llama.cpp 9 402 and
// 8 557).
#include "async_copy.cuh"
#include "flash_tile.cuh"
#include "mma.cuh"
#include "q8_act.cuh"

#define GQA (N_HEAD / N_HEAD_KV)
#define KV_WIDTH (N_HEAD_KV * HEAD_DIM)
#define FA_KEYS 32
#ifndef RING_BLOCKS
#define RING_BLOCKS 0  // a sliding-window layer's ring of cache blocks per sequence (kv_row, common.cuh)
#endif
#define FA_THREADS (GQA * WARP)
#define FA_PAD 4  // words after each shared row, so that the fragment loads of 8 rows hit distinct banks
#define FA_ROW (HEAD_DIM / 2 + FA_PAD)  // words (two halves each) of a shared row
#ifndef WINDOW
#define WINDOW 0
#endif

// The first position a token at pos sees (pos < 0: a row past the step, which sees none).
__device__ __forceinline__ int fa_first_visible(int pos) { return WINDOW > 0 && pos >= WINDOW ? pos - WINDOW + 1 : 0; }

static_assert(HEAD_DIM % 16 == 0 && HEAD_DIM <= 128, "head_dim: a multiple of 16, at most 128");
static_assert(N_HEAD % N_HEAD_KV == 0 && GQA <= 8, "at most 8 query heads (warps) per kv head");
static_assert(!EMIT_Q8 || HEAD_DIM % 32 == 0, "the twin's blocks of 32 must not straddle heads");

// The keys and values of FA_KEYS positions, aligned for 16-byte copies; two
// stages (at most 34 KB at HEAD_DIM 128).
struct alignas(16) FaTiles {
  u32 k[2][FA_KEYS][FA_ROW];
  u32 v[2][FA_KEYS][FA_ROW];
};

// Issues the copies of the keys and values of positions k0 .. k0 + FA_KEYS
// (below end) of kv head g into stage `stage`, 16 bytes a task; positions
// from end on are stored as zeros (P is 0 there, but V must not be NaN).
__device__ __forceinline__ void fa_stage_tile(FaTiles& tiles, int stage, int k0, int end, const u16* k_cache,
                                              const u16* v_cache, const int* table, int g) {
  constexpr int kChunks = HEAD_DIM / 8;
  for (int task = threadIdx.x; task < FA_KEYS * kChunks; task += FA_THREADS) {
    const int j = task / kChunks, c = task % kChunks;
    u32* kd = &tiles.k[stage][j][4 * c];
    u32* vd = &tiles.v[stage][j][4 * c];
    if (k0 + j < end) {
      const long long off = kv_row(table, 0, 0, k0 + j, BLOCK_SIZE, RING_BLOCKS) * KV_WIDTH + g * HEAD_DIM + 8 * c;
      cp_async<16>(kd, k_cache + off);
      cp_async<16>(vd, v_cache + off);
    } else {
      *reinterpret_cast<uint4*>(kd) = make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(vd) = make_uint4(0, 0, 0, 0);
    }
  }
}

RAYO_KERNEL RAYO_LAUNCH_BOUNDS_MIN(FA_THREADS, 1)  // every register a block may have: ptxas otherwise stops at 128
attention_prefill(const AttentionArgs args) {
  grid_dependency_wait();
  const int g = blockIdx.x, n = *args.n_rows;
  const int t0 = blockIdx.y * FA_TOKENS;
  if (!fa_tile_here(args.kv.seq, t0, n)) return;
  const int nt = n - t0 < FA_TOKENS ? n - t0 : FA_TOKENS;
  const int tid = threadIdx.x, warp = tid / WARP, lane = tid % WARP;
  const int gr = lane / 4, tq = lane % 4;  // the fragments' row group and column pair (mma.cuh)
  const int head = g * GQA + warp;
  const int* table = args.kv.block_table + args.kv.seq[t0] * *args.kv.max_blocks;

  __shared__ FaTiles tiles;
  __shared__ int last_pos, first_pos;

  // This lane's tokens (fragment rows gr and gr + 8): their positions, -1 past the step.
  const int pos_lo = gr < nt ? args.kv.positions[t0 + gr] : -1;
  const int pos_hi = gr + 8 < nt ? args.kv.positions[t0 + gr + 8] : -1;
  const int lo_lo = fa_first_visible(pos_lo), lo_hi = fa_first_visible(pos_hi);
  if (tid == 0) {
    int m = 0, f = 0x7fffffff;
    for (int i = 0; i < nt; ++i) {
      const int p = args.kv.positions[t0 + i];
      m = p > m ? p : m;
      f = fa_first_visible(p) < f ? fa_first_visible(p) : f;
    }
    last_pos = m;
    first_pos = f / FA_KEYS * FA_KEYS;  // the key tiles start at the tile holding the first position any row sees
  }

  // Q of this warp's head as A fragments, scaled, in f16.
  constexpr int kSteps = HEAD_DIM / 16;
  u32 qa[kSteps][4];
  {
    const float* q_lo = args.q + static_cast<long long>(t0 + gr) * (N_HEAD * HEAD_DIM) + head * HEAD_DIM;
    const float* q_hi = q_lo + 8LL * (N_HEAD * HEAD_DIM);
    auto at = [&](const float* row, bool valid, int d) { return valid ? row[d] * SCALE : 0.0f; };
RAYO_UNROLL
    for (int s = 0; s < kSteps; ++s) {
      const int d0 = 16 * s + 2 * tq, d1 = d0 + 8;
      qa[s][0] = pack_half2(at(q_lo, pos_lo >= 0, d0), at(q_lo, pos_lo >= 0, d0 + 1));
      qa[s][1] = pack_half2(at(q_hi, pos_hi >= 0, d0), at(q_hi, pos_hi >= 0, d0 + 1));
      qa[s][2] = pack_half2(at(q_lo, pos_lo >= 0, d1), at(q_lo, pos_lo >= 0, d1 + 1));
      qa[s][3] = pack_half2(at(q_hi, pos_hi >= 0, d1), at(q_hi, pos_hi >= 0, d1 + 1));
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
  const int end = last_pos + 1, start = first_pos;

  fa_stage_tile(tiles, 0, start, end, args.k_cache, args.v_cache, table, g);
  cp_async_commit();
  for (int k0 = start, stage = 0; k0 < end; k0 += FA_KEYS, stage ^= 1) {
    // 1. The next tile's copies go out (into the stage the previous tile's
    //    products were done with); this tile's must have landed.
    __syncthreads();
    if (k0 + FA_KEYS < end) fa_stage_tile(tiles, stage ^ 1, k0 + FA_KEYS, end, args.k_cache, args.v_cache, table, g);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    u32 (*ks)[FA_ROW] = tiles.k[stage];
    u32 (*vs)[FA_ROW] = tiles.v[stage];

    // 2. Scores: 4 tiles of 8 positions (n), K as the B fragments (B[k][n] = K[n][k]).
    float s[FA_KEYS / 8][4];
RAYO_UNROLL
    for (int nj = 0; nj < FA_KEYS / 8; ++nj) {
RAYO_UNROLL
      for (int i = 0; i < 4; ++i) s[nj][i] = 0.0f;
      const u32* krow = ks[8 * nj + gr];
RAYO_UNROLL
      for (int st = 0; st < kSteps; ++st) {
        const u32 b[2] = {krow[8 * st + tq], krow[8 * st + 4 + tq]};
        mma_16816(s[nj], qa[st], b);
      }
    }
    // Causality: position k0 + 8 nj + 2 tq (+1) against each row's own, and its window.
RAYO_UNROLL
    for (int nj = 0; nj < FA_KEYS / 8; ++nj)
RAYO_UNROLL
      for (int i = 0; i < 4; ++i) {
        const int j = k0 + 8 * nj + 2 * tq + (i & 1);
        const bool hi = i >= 2;
        if (j > (hi ? pos_hi : pos_lo) || j < (hi ? lo_hi : lo_lo)) s[nj][i] = -INFINITY;
      }
    // 3. Online softmax and P V (flash_tile.cuh).
    flash_step<FA_KEYS>(s, vs, gr, tq, rows, o);
  }

  cp_async_wait<0>();  // nothing is left but an empty group

  // O / l for this warp's head: rows gr and gr + 8, columns 8d + 2tq, + 1.
  const float inv_lo = rows.l_lo > 0.0f ? 1.0f / rows.l_lo : 0.0f, inv_hi = rows.l_hi > 0.0f ? 1.0f / rows.l_hi : 0.0f;
  float* out_lo = args.out + static_cast<long long>(t0 + gr) * (N_HEAD * HEAD_DIM) + head * HEAD_DIM;
  float* out_hi = out_lo + 8LL * (N_HEAD * HEAD_DIM);
RAYO_UNROLL
  for (int d = 0; d < kDimTiles; ++d) {
    const int c = 8 * d + 2 * tq;
    if (pos_lo >= 0) {
      out_lo[c] = o[d][0] * inv_lo;
      out_lo[c + 1] = o[d][1] * inv_lo;
    }
    if (pos_hi >= 0) {
      out_hi[c] = o[d][2] * inv_hi;
      out_hi[c + 1] = o[d][3] * inv_hi;
    }
  }
  if (EMIT_Q8) {
    // The twin of the group's columns of each row (HEAD_DIM % 32 == 0: a
    // head's blocks of 32 are its own), read back after every warp wrote.
    __syncthreads();
    constexpr int kBlocks = GQA * HEAD_DIM / 32;
    for (int task = warp; task < nt * kBlocks; task += GQA) {
      const int t = task / kBlocks, b = task % kBlocks;
      const TwinRow twin = twin_row<N_HEAD * HEAD_DIM>(args.out_q, args.out_ds, nullptr, t0 + t);
      const float v =
          args.out[static_cast<long long>(t0 + t) * (N_HEAD * HEAD_DIM) + g * GQA * HEAD_DIM + 32 * b + lane];
      emit_block32<false>(v, 0.0f, g * kBlocks + b, twin.q, twin.ds, nullptr);
    }
  }
}
