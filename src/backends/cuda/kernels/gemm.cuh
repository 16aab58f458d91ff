// Matrix products for steps of many tokens (prompts, large batches) on tensor
// cores, shared by gemm.cu, gemm_swiglu.cu and gemm_qkv_rope_store.cu. They
// take the GEMVs' inputs (gemv.cuh: quantized weights in their GPU layout, the
// q8 twin of the input, its norm statistics) and give the GEMVs' results, so
// the backend picks one or the other by the step's size alone.
//
// Work split: a block of GEMM_THREADS (4 warps) computes a tile of 64 matrix
// rows x kBlockTokens tokens (the int8 tiles' GEMM_TOKENS = 32; the f16
// tile's two halves of 32, one after the other, by the same decoded weights),
// in multiplies of 64 rows x 32 tokens: warp w owns rows 32 (w % 2) .. + 32
// and tokens 16 (w / 2) .. + 16 of the half, 2 x 2 tensor-core tiles of
// 16 x 8. The tile's sums then go through shared memory to the caller's
// epilogue. The host's grids use kernel_specs.h's gemm_block_tokens,
// kGemmRows and kGemmThreads, which mirror the macros below. Two ways to
// multiply, in two namespaces of the same names (GemmShared, gemm_stage_unit,
// gemm_tile), which a kernel file picks by its GEMM_EXACT macro with
// gemm_namespace.cuh:
//
// gemm_f16 (GEMM_EXACT 0, prompts): K is walked GEMM_K (256) values at a time,
// in a pipeline of asynchronous copies (async_copy.cuh):
//   1. the block copies the tile's weights, each row's chunk as its format
//      stores it (GPU layout planes), into one of two stages in shared
//      memory, and the first half's tokens' q8 twins into a third, with
//      cp.async: chunk kc + 1's weights are in flight while chunk kc is
//      decoded and multiplied (the second half's twins come from L2, their
//      loads in flight during the first half's multiply);
//   2. it decodes a landed chunk to f16 tiles (Gpu<FMT>::read from the stage,
//      unit_halves, a unit per task: the format's int8 lanes, each turned
//      into a float by one byte permutation and one subtraction (lane_exact)
//      and scaled by one FMA; tokens as d * q the same way, times the token's
//      1/rms with a fused norm: the twin holds x * norm_w, which a deep
//      model's residuals take past f16's 65 504 (inf, then NaN), while
//      x * norm_w / rms stays near the norm's weights);
//   3. each warp multiplies them (mma.cuh: f16 in, f32 accumulators), per
//      step of 16 values of K, its fragments loaded by ldmatrix; then the
//      second half's tokens take the token tile and the same weights.
// f16 tile rows are 256 halves (512 bytes); their 16-byte chunks are
// XOR-swizzled by row % 8, so the fragment loads of 8 rows (or 8 tokens) and
// the 16-byte stores hit distinct banks. Its results differ from the GEMVs' by
// the f16 rounding of weights and activations. The 96 KB of shared memory
// allow 2 blocks per SM on an H100 (1 on an A100).
//
// gemm_exact (GEMM_EXACT 1, gemm_int8.cuh; batch-invariant graphs): int8 in
// the GEMVs' order, the GEMV's bits for every output. The GEMV's lane p sums
// the units p, p + 32, ... of a row (unit_dot: integer segment sums, then the
// format's float combine), and the warp adds its 32 lanes' sums pairwise
// (warp_sum: lanes 16 apart first). Here the block walks the units in the
// order (lane p = bitrev5(s), then its units in turn) for s = 0 .. 31, GEMM_K
// values (4 or 8 units) per stage:
//   1. the block copies the units' bytes into one of two stages with
//      cp.async, one stage ahead (UnitPieces: the pieces Gpu<FMT>::read
//      takes), then stages the landed units' weights (Gpu<FMT>::ints) and
//      the tokens' activations (load_act, from L2) as int8 lanes, with the
//      units' scales (Meta) and the activations' (d, s) pairs;
//   2. each warp takes every segment sum of 16 values on tensor cores
//      (mma_s8_16816, exact), and each thread applies Gpu<FMT>::combine to its
//      outputs and adds the result to its running lane sum;
//   3. when a lane's units are done its sum joins a binary tree (a stack of 5
//      per output): bit-reversed lane order makes the tree's pairs those of
//      warp_sum.
// Integer sums are exact in any order and float adds are commutative, so with
// the kernels compiled without FMA contraction (kernel_specs: no_fma) each
// output is bit for bit the GEMV's. Tiles must not mix unit shapes (the host
// checks): gemm_swiglu.cu's two matrices share one, gemm_qkv_rope_store.cu's
// tiles hold one matrix each.
//
// gemm_int8 (GEMM_EXACT 2, gemm_int8.cuh; prompts of the formats
// kernel_specs' int8_gemm_is_faster names): the exact tile's stages and
// combine, the units walked along the row and each unit's result added
// straight to its output (no tree, FMA contraction allowed), for 64 tokens a
// block in two halves, as the f16 tile.
//
// Last measured (H100, 2026-11-28, docs/gpu-log.md): llama3-8b Q4_K_M pp512
// 6 080 t/s with every format on the f16 tile, 5 770 with Q6_K on the int8
// one, 4 896 with every format on it; llama.cpp 9 400 on the same GPU.
#pragma once
#include "async_copy.cuh"
#include "mma.cuh"
#include "unit_halves.cuh"
#include "weight_formats.cuh"

#define GEMM_THREADS 128
#define GEMM_WARPS (GEMM_THREADS / WARP)
#define GEMM_ROWS 64
#define GEMM_TOKENS 32
#define GEMM_K 256

// A matrix of a tile's rows: format FMT, M rows. The callers' units(op) pass
// one to op with each unit task, so that gemm_tile reads every row by its own
// format. (op is a UnitOp<K> of the kernel's namespace: NVRTC compiles no
// generic lambdas.)
template <int FMT, long long M>
struct GemmMatrix {};

// Units of format FMT in a chunk of GEMM_K values.
template <int FMT>
__device__ __forceinline__ constexpr int gemm_units_per_chunk() {
  return GEMM_K / Gpu<FMT>::kUnit;
}

// A tile's end: the warps' accumulators (acc[mi][ni]: rows 32 (w % 2) + 16 mi
// + g (+ 8), tokens tok0 + 16 (w / 2) + 8 ni + 2t (+ 1), as mma.cuh's
// fragments) into sh.out()[token][row], and with kNorm each token's 1/rms
// into sh.inv(), for the caller to apply (the exact tile's sums lack it; the
// f16 tile's have it already: kNormInSums). Every thread must call it, after
// a __syncthreads.
template <int K, bool kNorm, typename Shared>
__device__ __forceinline__ void gemm_tile_results(const float (&acc)[2][2][4], const float* xss, float eps, int nt,
                                                  Shared& sh, int tok0 = 0) {
  const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
  const int g = lane / 4, t = lane % 4;
  float (*out)[GEMM_ROWS] = sh.out();
RAYO_UNROLL
  for (int mi = 0; mi < 2; ++mi)
RAYO_UNROLL
    for (int ni = 0; ni < 2; ++ni) {
      const int r = 32 * (warp % 2) + 16 * mi + g, n = tok0 + 16 * (warp / 2) + 8 * ni + 2 * t;
      out[n][r] = acc[mi][ni][0];
      out[n + 1][r] = acc[mi][ni][1];
      out[n][r + 8] = acc[mi][ni][2];
      out[n + 1][r + 8] = acc[mi][ni][3];
    }
  if (kNorm) {
    for (int n = warp; n < nt; n += GEMM_WARPS) {
      const float inv = inv_rms<K>(xss + static_cast<long long>(n) * ((K + 31) / 32), eps);
      if (lane == 0) sh.inv()[n] = inv;
    }
  }
  __syncthreads();
}

namespace gemm_f16 {
#define GEMM_WORDS (GEMM_K / 2)  // 32-bit words (two halves) in a shared row
// Bytes of a stage slot: one row's chunk of any format as copied (StagePlanes;
// Q8_0's 276 the most). 304 = 76 words: the 16-byte reads of 8 consecutive
// slots start 12 banks apart, in distinct groups of 4.
#define GEMM_SLOT 304

// Tokens per block: two halves of GEMM_TOKENS, multiplied one after the other
// by each chunk's weights, decoded once: a decoded weight serves 64 tokens.
// The token tile holds one half at a time (the first half's twins staged a
// chunk ahead by cp.async, the second's read from L2 when its turn comes), so
// the shared memory stays within the 96 KB every sm_80+ GPU allows.
constexpr int kBlockTokens = 2 * GEMM_TOKENS;

// The word of row `row` holding halves 2*word, 2*word+1 of its K chunk.
__device__ __forceinline__ int gemm_swizzle(int row, int word) { return ((word >> 2) ^ (row & 7)) * 4 + (word & 3); }

// The shared memory of a block (dynamic: all 96 KB of kernel_specs.h's
// kGemmSharedBytes): the f16 tiles the tensor cores read, weights
// [GEMM_ROWS][GEMM_WORDS] and tokens [GEMM_TOKENS][GEMM_WORDS] as f16 pairs,
// and the stages the asynchronous copies fill: each row's chunk as its
// format stores it (two stages, chunks kc % 2), and the first half's tokens'
// q8 twin (one stage: q and the blocks' scales d; the tile has no use for the
// twin's s). With a fused norm, `scale` holds each token's 1/rms for the
// whole K loop. After the K loop the weight tile holds the sums,
// out[kBlockTokens][GEMM_ROWS] floats.
struct alignas(16) GemmShared {
  u32 w[GEMM_ROWS][GEMM_WORDS];
  u32 x[GEMM_TOKENS][GEMM_WORDS];
  u8 raw[2][GEMM_ROWS][GEMM_SLOT];
  i8 xq[GEMM_TOKENS][GEMM_K];
  float xd[GEMM_TOKENS][GEMM_K / 32];
  float scale[kBlockTokens];
  __device__ float (*out())[GEMM_ROWS] { return reinterpret_cast<float (*)[GEMM_ROWS]>(&w[0][0]); }
  __device__ float* inv() { return reinterpret_cast<float*>(&x[0][0]); }
};
static_assert(sizeof(GemmShared) <= 98304, "kernel_specs.h's kGemmSharedBytes");
static_assert(sizeof(float) * kBlockTokens * GEMM_ROWS <= sizeof(GemmShared::w), "out() fits in w");

// The tile's sums come out with the norm's 1/rms already applied (it scales
// the token tile), so callers must not apply sh.inv() again.
constexpr bool kNormInSums = true;

// A row's chunk of format FMT in a stage slot, read as Gpu<FMT>::read reads a
// matrix (weight_formats.cuh: GlobalPlanes): plane p's part of the chunk's
// blocks, from block b0 on, at offset(p). A plane of 2-byte fields (the f16
// scales d) is copied in whole aligned words, so its part starts at the even
// block at or before b0.
template <int FMT, int K>
struct StagePlanes {
  static constexpr int kCols = K;
  static constexpr int kBlocks = GEMM_K / Gpu<FMT>::kBlock;  // per chunk: 8 or 1
  __device__ static constexpr int span(int p) {
    return plane_bytes<FMT>(p) == 2 ? (2 * (kBlocks + 1) + 3) / 4 * 4 : kBlocks * plane_bytes<FMT>(p);
  }
  __device__ static constexpr int offset(int p) { return p == 0 ? 0 : p == 1 ? span(0) : span(0) + span(1); }
  static_assert(Gpu<FMT>::kPlane0 % 16 == 0, "plane 0 copies in 16-byte pieces");
  static_assert(plane_bytes<FMT>(2) == 0 || plane_bytes<FMT>(2) % 16 != 0 || offset(2) % 16 == 0,
                "plane 2's 16-byte pieces land aligned");
  static_assert(offset(2) + span(2) <= GEMM_SLOT, "a chunk fits its slot");
  __device__ static long long first(int p, long long b0) { return plane_bytes<FMT>(p) == 2 ? (b0 & ~1LL) : b0; }

  const u8* slot;
  long long b0;
  __device__ const u8* at(int p, long long b, int byte) const {
    return slot + offset(p) + (b - first(p, b0)) * plane_bytes<FMT>(p) + byte;
  }
  __device__ uint4 ld16(int p, long long b, int byte) const { return *reinterpret_cast<const uint4*>(at(p, b, byte)); }
  __device__ u32 ld4(int p, long long b, int byte) const { return *reinterpret_cast<const u32*>(at(p, b, byte)); }
  __device__ u16 ld2(int p, long long b, int byte) const { return *reinterpret_cast<const u16*>(at(p, b, byte)); }
};

// Issues the copies of unit task uc (of gemm_units_per_chunk<FMT>() per row)
// of chunk kc of a row of an M x K matrix of format FMT into slot `srow` of
// stage kc % 2: the tasks share the chunk's 16-byte pieces of plane 0 (and of
// the other planes of 16-byte fields) and the 4-byte pieces of the others
// round robin. Blocks past the row's end (K not a multiple of GEMM_K) are not
// copied. The loops run a fixed number of times (a task's share of a whole
// chunk), each copy at a constant offset from the plane's start: the copies
// unroll into a list with no index arithmetic between them. (Loops bounded
// by the chunk's blocks took about 60 instructions a copy: Q8_0's f16 tile
// ran about 2 220 instructions per thread and chunk on sm_90, now 1 690.)
template <int FMT, long long M, int K>
__device__ __forceinline__ void gemm_stage_unit(const u8* w, long long row, int kc, int uc, GemmShared& sh, int srow) {
  using S = StagePlanes<FMT, K>;
  constexpr int kPer = gemm_units_per_chunk<FMT>();
  constexpr int kRowBlocks = K / Gpu<FMT>::kBlock;
  // The chunk's blocks: all S::kBlocks (known when K is a multiple of GEMM_K)
  // but in a last, partial chunk.
  const int n = kRowBlocks % S::kBlocks == 0 || kRowBlocks - kc * S::kBlocks >= S::kBlocks
                    ? S::kBlocks
                    : kRowBlocks - kc * S::kBlocks;
  const long long b0 = row * kRowBlocks + static_cast<long long>(kc) * S::kBlocks;
  const GlobalPlanes<FMT, M, K> g{w};
  u8* slot = sh.raw[kc % 2][srow];
RAYO_UNROLL
  for (int p = 0; p < 3; ++p) {
    constexpr int kMaxWords[3] = {S::span(0) / 4, S::span(1) / 4, S::span(2) / 4};
    const int bytes = plane_bytes<FMT>(p);
    if (bytes == 0) continue;
    if (bytes % 16 == 0) {  // plane 0 always (StagePlanes asserts it)
      constexpr int kMaxPieces[3] = {S::span(0) / 16, S::span(1) / 16, S::span(2) / 16};
      const u8* from = g.at(p, b0, 0);
      u8* to = slot + S::offset(p);
RAYO_UNROLL
      for (int j = 0; j < (kMaxPieces[p] + kPer - 1) / kPer; ++j) {
        const int i = uc + j * kPer;
        if (i < n * bytes / 16) cp_async<16>(to + 16 * i, from + 16 * i);
      }
      continue;
    }
    const long long first = S::first(p, b0);
    const int words = bytes == 2 ? static_cast<int>(b0 + n - first + 1) / 2 : n * bytes / 4;
    const u8* from = g.at(p, first, 0);
    u8* to = slot + S::offset(p);
RAYO_UNROLL
    for (int j = 0; j < (kMaxWords[p] + kPer - 1) / kPer; ++j) {
      const int i = uc + j * kPer;
      if (i < words) cp_async<4>(to + 4 * i, from + 4 * i);
    }
  }
}

// Decodes unit task uc of chunk kc of that row from its stage into shared
// row `srow` of the f16 tile: 16-byte pieces of f16 pairs at their swizzled
// places (a piece's 4 words stay together); units past the row's end give
// zeros.
template <int FMT, int K>
__device__ __forceinline__ void gemm_decode_unit(long long row, int kc, int uc, GemmShared& sh, int srow) {
  using F = Gpu<FMT>;
  using S = StagePlanes<FMT, K>;
  constexpr int kPerBlock = F::kBlock / F::kUnit;
  const int u = kc * gemm_units_per_chunk<FMT>() + uc;
  uint4 pieces[F::kUnit / 8];
  if (u < K / F::kUnit) {
    const long long b0 = row * (K / F::kBlock) + static_cast<long long>(kc) * S::kBlocks;
    unit_halves<FMT>(F::read(S{sh.raw[kc % 2][srow], b0}, b0 + uc / kPerBlock, unit_in_block<FMT>(uc)), pieces);
  } else {
RAYO_UNROLL
    for (int p = 0; p < F::kUnit / 8; ++p) pieces[p] = make_uint4(0, 0, 0, 0);
  }
RAYO_UNROLL
  for (int p = 0; p < F::kUnit / 8; ++p) {
    const int word = F::offset(uc, 8 * p) / 2;  // a multiple of 4: runs start at multiples of 16 values
    *reinterpret_cast<uint4*>(&sh.w[srow][gemm_swizzle(srow, word)]) = pieces[p];
  }
}

// Issues the copies of the tokens' q8 twin for chunk kc (tokens t < nt,
// values below K) into the token stage. Each thread keeps one place in the
// chunk (a fixed piece or block) and takes every (GEMM_THREADS / places per
// token)-th token: no index arithmetic beyond a stride per task.
template <int K>
__device__ __forceinline__ void gemm_stage_token_copies(const i8* xq, const float2* xds, int nt, int kc,
                                                        GemmShared& sh) {
  constexpr int kPieces = GEMM_K / 16, kBlocks = GEMM_K / 32;
  static_assert(GEMM_THREADS % kPieces == 0 && GEMM_THREADS % kBlocks == 0, "fixed places per thread");
  const int piece = threadIdx.x % kPieces, blk = threadIdx.x % kBlocks;
  const long long kp = static_cast<long long>(kc) * GEMM_K + 16 * piece;
  const long long kb = static_cast<long long>(kc) * GEMM_K + 32 * blk;
RAYO_UNROLL
  for (int i = 0; i < GEMM_TOKENS * kPieces / GEMM_THREADS; ++i) {
    const int t = threadIdx.x / kPieces + i * (GEMM_THREADS / kPieces);
    if (t < nt && kp < K) cp_async<16>(&sh.xq[t][16 * piece], xq + static_cast<long long>(t) * K + kp);
  }
RAYO_UNROLL
  for (int i = 0; i < GEMM_TOKENS * kBlocks / GEMM_THREADS; ++i) {
    const int t = threadIdx.x / kBlocks + i * (GEMM_THREADS / kBlocks);
    if (t < nt && kb < K)  // d, the first float of the block's (d, s)
      cp_async<4>(&sh.xd[t][blk], reinterpret_cast<const float*>(xds + static_cast<long long>(t) * (K / 32) + kb / 32));
  }
}

// Each token's 1/rms (t < nt) into sh.scale, from its ss blocks as the GEMV
// sums them (inv_rms), so that the GEMM and the GEMV scale by the same float.
template <int K>
__device__ __forceinline__ void gemm_token_scales(const float* xss, float eps, int nt, GemmShared& sh) {
  const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
  for (int t = warp; t < nt; t += GEMM_WARPS) {
    const float inv = inv_rms<K>(xss + static_cast<long long>(t) * ((K + 31) / 32), eps);
    if (lane == 0) sh.scale[t] = inv;
  }
}

// 8 int8 lanes q of a token's twin times d, as 8 halves f16(d * q) (one
// 16-byte chunk of the token tile); lane_exact converts the lanes.
__device__ __forceinline__ uint4 token_halves(uint2 q, float d) {
  const u32 lo = q.x ^ 0x80808080u, hi = q.y ^ 0x80808080u;
  auto at = [&](u32 x, int n) { return lane_exact(x, n) * d; };
  return make_uint4(pack_half2(at(lo, 0), at(lo, 1)), pack_half2(at(lo, 2), at(lo, 3)),
                    pack_half2(at(hi, 0), at(hi, 1)), pack_half2(at(hi, 2), at(hi, 3)));
}

// A thread's share of a half's token tile for one chunk: each thread keeps
// one group of 8 values and takes every (GEMM_THREADS / groups)-th token.
struct TokenShare {
  static constexpr int kGroups = GEMM_K / 8, kPer = GEMM_TOKENS * kGroups / GEMM_THREADS;
  static_assert(GEMM_THREADS % kGroups == 0, "a fixed group per thread");
  uint2 q[kPer];  // the group's 8 int8 lanes, per token
  float d[kPer];  // its block's scale
  __device__ static int group() { return threadIdx.x % kGroups; }
  __device__ static int token(int i) { return threadIdx.x / kGroups + i * (GEMM_THREADS / kGroups); }
};

// This thread's share of the twins of chunk kc of a half's nt tokens (tokens
// past nt, and values past K, as zeros): from the token stage (kFromStage,
// the first half), or straight from L2 (xq, xds: the second half's rows),
// all loads issued before any is used.
template <int K, bool kFromStage>
__device__ __forceinline__ TokenShare gemm_token_share(const i8* xq, const float2* xds, int nt, int kc,
                                                       const GemmShared& sh) {
  TokenShare s;
  const int grp = TokenShare::group();
  const long long k = static_cast<long long>(kc) * GEMM_K + 8 * grp;
RAYO_UNROLL
  for (int i = 0; i < TokenShare::kPer; ++i) {
    const int t = TokenShare::token(i);
    s.q[i] = uint2{0u, 0u};
    s.d[i] = 0.0f;
    if (t < nt && k < K) {
      if (kFromStage) {
        s.q[i] = *reinterpret_cast<const uint2*>(&sh.xq[t][8 * grp]);
        s.d[i] = sh.xd[t][grp / 4];
      } else {
        s.q[i] = *reinterpret_cast<const uint2*>(xq + static_cast<long long>(t) * K + k);
        s.d[i] = xds[static_cast<long long>(t) * (K / 32) + k / 32].x;
      }
    }
  }
  return s;
}

// The token tile from a share of half `half` (its nt tokens): f16(d * q), with
// kNorm f16(d * 1/rms * q).
template <bool kNorm>
__device__ __forceinline__ void gemm_stage_tokens(const TokenShare& s, int nt, int half, GemmShared& sh) {
  const int grp = TokenShare::group();
RAYO_UNROLL
  for (int i = 0; i < TokenShare::kPer; ++i) {
    const int t = TokenShare::token(i);
    const float scale = kNorm && t < nt ? sh.scale[GEMM_TOKENS * half + t] : 1.0f;
    // 8 halves = one 16-byte chunk (4 words) of the token's row.
    *reinterpret_cast<uint4*>(&sh.x[t][gemm_swizzle(t, 4 * grp)]) = token_halves(s.q[i], s.d[i] * scale);
  }
}

// The tile's multiply of one staged chunk: warp w's 32 rows x 16 tokens, per
// step of 16 values of K (pieces 2 ks, 2 ks + 1) three ldmatrix_x4 (mma.cuh:
// a weight fragment per 16 rows, both token fragments) and four MMAs. The
// swizzle keeps each 8-row matrix's pieces in distinct banks.
__device__ __forceinline__ void gemm_mma_chunk(const GemmShared& sh, float (&acc)[2][2][4]) {
  const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
  const int row0 = 32 * (warp % 2), tok0 = 16 * (warp / 2);
  const int arow = ldm_a_row(lane), apiece = ldm_a_piece(lane);
  const int btok = tok0 + ldm_b_row(lane), bpiece = ldm_b_piece(lane);
RAYO_UNROLL
  for (int ks = 0; ks < GEMM_K / 16; ++ks) {
    u32 a[2][4], b[4];
RAYO_UNROLL
    for (int mi = 0; mi < 2; ++mi) {
      const int r = row0 + 16 * mi + arow;
      ldmatrix_x4(a[mi], &sh.w[r][gemm_swizzle(r, 4 * (2 * ks + apiece))]);
    }
    ldmatrix_x4(b, &sh.x[btok][gemm_swizzle(btok, 4 * (2 * ks + bpiece))]);
RAYO_UNROLL
    for (int mi = 0; mi < 2; ++mi)
RAYO_UNROLL
      for (int ni = 0; ni < 2; ++ni) mma_16816(acc[mi][ni], a[mi], &b[2 * ni]);
  }
}

// What gemm_tile does with each unit task of chunk kc: issue its copies, or
// decode it from its stage.
template <int K>
struct UnitOp {
  GemmShared& sh;
  int kc;
  bool decode;
  template <int FMT, long long M>
  __device__ void operator()(GemmMatrix<FMT, M>, const u8* w, long long row, int uc, int srow) const {
    if (decode)
      gemm_decode_unit<FMT, K>(row, kc, uc, sh, srow);
    else
      gemm_stage_unit<FMT, M, K>(w, row, kc, uc, sh, srow);
  }
};

// Zeroed accumulators of the block's two halves of tokens.
__device__ __forceinline__ void zero_acc(float (&acc)[2][2][2][4]) {
RAYO_UNROLL
  for (int h = 0; h < 2; ++h)
RAYO_UNROLL
    for (int mi = 0; mi < 2; ++mi)
RAYO_UNROLL
      for (int ni = 0; ni < 2; ++ni)
RAYO_UNROLL
        for (int i = 0; i < 4; ++i) acc[h][mi][ni][i] = 0.0f;
}

// The whole K loop of a tile of kBlockTokens tokens. units(op) calls
// op(GemmMatrix<FMT, M>{}, w, row, uc, srow) for every unit task of the
// tile's 64 shared rows (the caller decides which matrix row each is). Per
// chunk kc, software-pipelined:
//   - the copies of chunk kc + 1's weights are issued first (stage (kc+1) % 2),
//     so they are in flight while chunk kc is decoded and multiplied;
//   - the block waits for chunk kc's copies, decodes them into the f16 tiles
//     (the first half's tokens from their stage), then issues the copies of
//     chunk kc + 1's first-half tokens (their stage is free once decoded) and
//     multiplies the first half;
//   - with a second half (nt > GEMM_TOKENS, the same for the whole block), its
//     tokens' loads from L2 are issued before the first half's multiply, and
//     staged into the token tile after it, for a multiply by the same decoded
//     weights.
// Each iteration commits one group of copies before its wait and one after,
// so cp_async_wait<1> leaves only the newest (the next chunk's weights) in
// flight. Leaves the sums in sh.out()[token][row], with kNorm already scaled
// by each token's 1/rms (kNormInSums); every thread must call it. (FMT_LO and
// FMT_HI, the formats of rows 0..31 and 32..63, matter to GEMM_EXACT only.)
template <int K, bool kNorm, int FMT_LO, int FMT_HI, typename Units>
__device__ __forceinline__ void gemm_tile(const Units& units, const i8* xq, const float2* xds, const float* xss,
                                          float eps, int nt, GemmShared& sh) {
  constexpr int kChunks = (K + GEMM_K - 1) / GEMM_K;
  const int nt0 = nt < GEMM_TOKENS ? nt : GEMM_TOKENS, nt1 = nt - nt0;  // tokens of each half
  const i8* xq1 = xq + static_cast<long long>(GEMM_TOKENS) * K;
  const float2* xds1 = xds + static_cast<long long>(GEMM_TOKENS) * (K / 32);
  float acc[2][2][2][4];
  zero_acc(acc);
  units(UnitOp<K>{sh, 0, false});
  gemm_stage_token_copies<K>(xq, xds, nt0, 0, sh);
  cp_async_commit();
  // While the first chunk's copies fly; the loop's first barrier publishes them.
  if (kNorm) gemm_token_scales<K>(xss, eps, nt, sh);
  for (int kc = 0; kc < kChunks; ++kc) {
    if (kc + 1 < kChunks) units(UnitOp<K>{sh, kc + 1, false});
    cp_async_commit();
    cp_async_wait<1>();  // chunk kc's weights and tokens have landed ...
    __syncthreads();     // ... everyone's; and the previous multiply is done with the tiles
    units(UnitOp<K>{sh, kc, true});
    gemm_stage_tokens<kNorm>(gemm_token_share<K, true>(xq, xds, nt0, kc, sh), nt0, 0, sh);
    __syncthreads();
    if (kc + 1 < kChunks) gemm_stage_token_copies<K>(xq, xds, nt0, kc + 1, sh);
    cp_async_commit();
    TokenShare second;
    if (nt1 > 0) second = gemm_token_share<K, false>(xq1, xds1, nt1, kc, sh);
    gemm_mma_chunk(sh, acc[0]);
    if (nt1 > 0) {
      __syncthreads();  // the first half's multiply is done with the token tile
      gemm_stage_tokens<kNorm>(second, nt1, 1, sh);
      __syncthreads();
      gemm_mma_chunk(sh, acc[1]);
    }
  }
  cp_async_wait<0>();  // nothing is left but empty groups
  __syncthreads();
  gemm_tile_results<K, false>(acc[0], xss, eps, nt, sh);
  gemm_tile_results<K, false>(acc[1], xss, eps, nt, sh, GEMM_TOKENS);
}

// The K loop of a tile of F16 weights as stored (rows of K halves, K a
// multiple of 8; rows row0 .. row0 + 63 of M, those past M read as row M - 1
// and not written by the caller) times f32 activations (x: the tile's nt
// token rows of K floats, up to kBlockTokens): nothing to decode, so each
// chunk's 16-byte pieces of the weights are copied with cp.async straight to
// their swizzled places in the f16 tile, while each half's tokens in turn are
// converted to f16 into theirs; values past K are zeros. No fused norm. (The
// copies do not yet overlap the previous chunk's multiply.) Leaves the sums in
// sh.out()[token][row].
template <long long M, int K>
__device__ __forceinline__ void gemm_tile_half_rows(const u16* w, long long row0, const float* x, int nt,
                                                    GemmShared& sh) {
  static_assert(K % 8 == 0, "16-byte pieces of f16 rows");
  constexpr int kChunks = (K + GEMM_K - 1) / GEMM_K;
  constexpr int kPieces = GEMM_K / 8;  // 16-byte pieces of a row's chunk
  const int halves = nt > GEMM_TOKENS ? 2 : 1;
  float acc[2][2][2][4];
  zero_acc(acc);
  for (int kc = 0; kc < kChunks; ++kc) {
    const int k0 = kc * GEMM_K;
    for (int task = threadIdx.x; task < GEMM_ROWS * kPieces; task += GEMM_THREADS) {
      const int r = task / kPieces, piece = task % kPieces;
      const long long row = row0 + r < M ? row0 + r : M - 1;
      u32* dst = &sh.w[r][gemm_swizzle(r, 4 * piece)];
      if (k0 + 8 * piece < K)
        cp_async<16>(dst, w + row * K + k0 + 8 * piece);
      else
        *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
    }
    cp_async_commit();
    for (int h = 0; h < halves; ++h) {
      for (int task = threadIdx.x; task < GEMM_TOKENS * kPieces; task += GEMM_THREADS) {
        const int t = task / kPieces, grp = task % kPieces;
        uint4 packed = make_uint4(0, 0, 0, 0);
        if (GEMM_TOKENS * h + t < nt && k0 + 8 * grp < K) {
          const float4* p = reinterpret_cast<const float4*>(
              x + static_cast<long long>(GEMM_TOKENS * h + t) * K + k0 + 8 * grp);
          const float4 a = p[0], b = p[1];
          packed = make_uint4(pack_half2(a.x, a.y), pack_half2(a.z, a.w), pack_half2(b.x, b.y), pack_half2(b.z, b.w));
        }
        *reinterpret_cast<uint4*>(&sh.x[t][gemm_swizzle(t, 4 * grp)]) = packed;
      }
      cp_async_wait<0>();
      __syncthreads();  // every thread's pieces of both tiles are in place
      gemm_mma_chunk(sh, acc[h]);
      __syncthreads();  // the multiply is done with the tiles before the next half or chunk
    }
  }
  gemm_tile_results<K, false>(acc[0], nullptr, 0.0f, nt, sh);
  gemm_tile_results<K, false>(acc[1], nullptr, 0.0f, nt, sh, GEMM_TOKENS);
}
}  // namespace gemm_f16

#include "gemm_int8.cuh"
