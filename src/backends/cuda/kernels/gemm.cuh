// Matrix products for steps of many tokens (prompts, large batches) on tensor
// cores, shared by gemm.cu, gemm_swiglu.cu and gemm_qkv_rope_store.cu. They
// take the GEMVs' inputs (gemv.cuh: quantized weights in their GPU layout, the
// q8 twin of the input, its norm statistics) and give the GEMVs' results, so
// the backend picks one or the other by the step's size alone.
//
// Work split: a block of GEMM_THREADS (4 warps) computes a tile of 64 matrix
// rows x GEMM_TOKENS (32) tokens; warp w owns rows 32 (w % 2) .. + 32 and
// tokens 16 (w / 2) .. + 16, 2 x 2 tensor-core tiles of 16 x 8. The tile's
// sums then go through shared memory to the caller's epilogue. The host's
// grids use kernel_specs.h's kGemmTokens, kGemmRows and kGemmThreads, which
// mirror the macros below. Two ways to multiply, in two namespaces of the
// same names (GemmShared, gemm_stage_unit, gemm_tile), which a kernel file
// picks by its GEMM_EXACT macro with gemm_namespace.cuh:
//
// gemm_f16 (GEMM_EXACT 0, prompts): K is walked GEMM_K (256) values at a time:
//   1. the block decodes the tile's weights (Gpu<FMT>::values, a unit per
//      task) and the tokens' twins (d * q) to f16 in shared memory;
//   2. each warp multiplies them (mma.cuh: f16 in, f32 accumulators), per
//      step of 16 values of K.
// Shared memory rows are 256 halves (512 bytes); their 16-byte chunks are
// XOR-swizzled by row % 8, so the fragment loads of 8 rows (or 8 tokens) and
// the 16-byte stores hit distinct banks. Its results differ from the GEMVs' by
// the f16 rounding of weights and activations.
//
// gemm_exact (GEMM_EXACT 1, gemm_exact.cuh; batch-invariant graphs): int8 in
// the GEMVs' order, the GEMV's bits for every output. The GEMV's lane p sums
// the units p, p + 32, ... of a row (unit_dot: integer segment sums, then the
// format's float combine), and the warp adds its 32 lanes' sums pairwise
// (warp_sum: lanes 16 apart first). Here the block walks the units in the
// order (lane p = bitrev5(s), then its units in turn) for s = 0 .. 31, GEMM_K
// values (4 or 8 units) per stage:
//   1. the block stages the units' weights (Gpu<FMT>::ints) and the tokens'
//      activations (load_act) as int8 lanes, with the units' scales (Meta)
//      and the activations' (d, s) pairs, in shared memory;
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
// Last measured: not yet (written without a GPU).
#pragma once
#include "mma.cuh"
#include "weight_formats.cuh"

#define GEMM_THREADS 128
#define GEMM_WARPS (GEMM_THREADS / WARP)
#define GEMM_ROWS 64
#define GEMM_TOKENS 32
#define GEMM_K 256

// Units of format FMT in a chunk of GEMM_K values.
template <int FMT>
__device__ __forceinline__ constexpr int gemm_units_per_chunk() {
  return GEMM_K / Gpu<FMT>::kUnit;
}

// A tile's end: the warps' accumulators (acc[mi][ni]: rows 32 (w % 2) + 16 mi
// + g (+ 8), tokens 16 (w / 2) + 8 ni + 2t (+ 1), as mma.cuh's fragments) into
// sh.out()[token][row], and with kNorm each token's 1/rms into sh.inv().
// Every thread must call it, after a __syncthreads.
template <int K, bool kNorm, typename Shared>
__device__ __forceinline__ void gemm_tile_results(const float (&acc)[2][2][4], const float* xss, float eps, int nt,
                                                  Shared& sh) {
  const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
  const int g = lane / 4, t = lane % 4;
  float (*out)[GEMM_ROWS] = sh.out();
RAYO_UNROLL
  for (int mi = 0; mi < 2; ++mi)
RAYO_UNROLL
    for (int ni = 0; ni < 2; ++ni) {
      const int r = 32 * (warp % 2) + 16 * mi + g, n = 16 * (warp / 2) + 8 * ni + 2 * t;
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

// The word of row `row` holding halves 2*word, 2*word+1 of its K chunk.
__device__ __forceinline__ int gemm_swizzle(int row, int word) { return ((word >> 2) ^ (row & 7)) * 4 + (word & 3); }

// The shared tiles: weights [GEMM_ROWS][GEMM_WORDS] and tokens
// [GEMM_TOKENS][GEMM_WORDS] as f16 pairs; after the K loop the weight tile holds
// the sums, out[GEMM_TOKENS][GEMM_ROWS] floats, and the token tile the tokens'
// 1/rms (norm).
struct alignas(16) GemmShared {  // 16-byte stores into x
  u32 w[GEMM_ROWS][GEMM_WORDS];
  u32 x[GEMM_TOKENS][GEMM_WORDS];
  __device__ float (*out())[GEMM_ROWS] { return reinterpret_cast<float (*)[GEMM_ROWS]>(&w[0][0]); }
  __device__ float* inv() { return reinterpret_cast<float*>(&x[0][0]); }
};

// Decodes unit uc of chunk kc of a row of a matrix of format FMT into shared
// row `srow`: values converted to f16 pairs at their swizzled places.
// Units past the row's end (K not a multiple of GEMM_K) give zeros.
template <int FMT, long long M, int K>
__device__ __forceinline__ void gemm_stage_unit(const u8* w, long long row, int kc, int uc, GemmShared& sh, int srow) {
  u32 (*ws)[GEMM_WORDS] = sh.w;
  using F = Gpu<FMT>;
  constexpr int kPerChunk = GEMM_K / F::kUnit;
  const int u = kc * kPerChunk + uc;
  float v[F::kUnit];
  if (u < K / F::kUnit) {
    F::values(F::template load<M, K>(w, row, u), v);
  } else {
RAYO_UNROLL
    for (int i = 0; i < F::kUnit; ++i) v[i] = 0.0f;
  }
RAYO_UNROLL
  for (int i = 0; i < F::kUnit; i += 2) {
    const int word = F::offset(uc, i) / 2;  // a unit's runs are even-aligned, so v[i], v[i+1] share a word
    ws[srow][gemm_swizzle(srow, word)] = pack_half2(v[i], v[i + 1]);
  }
}

// The tokens' part of chunk kc: t < nt from the q8 twin (q, ds), as f16(d * q);
// tokens past nt as zeros.
template <int K>
__device__ __forceinline__ void gemm_stage_tokens(const i8* xq, const float2* xds, int nt, int kc, GemmShared& sh) {
  for (int task = threadIdx.x; task < GEMM_TOKENS * (GEMM_K / 8); task += GEMM_THREADS) {
    const int t = task / (GEMM_K / 8), grp = task % (GEMM_K / 8);
    uint4 packed = make_uint4(0, 0, 0, 0);
    if (t < nt && static_cast<long long>(kc) * GEMM_K + 8 * grp < K) {
      const long long k = static_cast<long long>(kc) * GEMM_K + 8 * grp;
      const uint2 q = __ldg(reinterpret_cast<const uint2*>(xq + static_cast<long long>(t) * K + k));
      const float d = __ldg(xds + static_cast<long long>(t) * (K / 32) + k / 32).x;
      auto at = [&](int i) {
        const u32 wv = i < 4 ? q.x : q.y;
        return static_cast<float>(static_cast<i8>((wv >> (8 * (i % 4))) & 0xFF)) * d;
      };
      packed = make_uint4(pack_half2(at(0), at(1)), pack_half2(at(2), at(3)), pack_half2(at(4), at(5)),
                          pack_half2(at(6), at(7)));
    }
    // 8 halves = one 16-byte chunk (4 words) of the token's row.
    *reinterpret_cast<uint4*>(&sh.x[t][gemm_swizzle(t, 4 * grp)]) = packed;
  }
}

// The tile's multiply of one staged chunk: warp w's 32 rows x 16 tokens.
__device__ __forceinline__ void gemm_mma_chunk(const GemmShared& sh, float (&acc)[2][2][4]) {
  const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
  const int g = lane / 4, t = lane % 4;
  const int row0 = 32 * (warp % 2), tok0 = 16 * (warp / 2);
RAYO_UNROLL
  for (int ks = 0; ks < GEMM_K / 16; ++ks) {
    u32 a[2][4], b[2][2];
RAYO_UNROLL
    for (int mi = 0; mi < 2; ++mi) {
      const int r0 = row0 + 16 * mi + g, r1 = r0 + 8;
      a[mi][0] = sh.w[r0][gemm_swizzle(r0, 8 * ks + t)];
      a[mi][1] = sh.w[r1][gemm_swizzle(r1, 8 * ks + t)];
      a[mi][2] = sh.w[r0][gemm_swizzle(r0, 8 * ks + 4 + t)];
      a[mi][3] = sh.w[r1][gemm_swizzle(r1, 8 * ks + 4 + t)];
    }
RAYO_UNROLL
    for (int ni = 0; ni < 2; ++ni) {
      const int n = tok0 + 8 * ni + g;
      b[ni][0] = sh.x[n][gemm_swizzle(n, 8 * ks + t)];
      b[ni][1] = sh.x[n][gemm_swizzle(n, 8 * ks + 4 + t)];
    }
RAYO_UNROLL
    for (int mi = 0; mi < 2; ++mi)
RAYO_UNROLL
      for (int ni = 0; ni < 2; ++ni) mma_16816(acc[mi][ni], a[mi], b[ni]);
  }
}

// The whole K loop of a tile: stage_rows(kc) fills sh.w with the 64 shared
// rows' chunk kc (the caller decides which matrix row each is), then the
// tokens, then the multiply. Leaves the sums in sh.out()[token][row] and, with
// kNorm, each token's 1/rms in sh.inv(); every thread must call it. (FMT_LO
// and FMT_HI, the formats of rows 0..31 and 32..63, matter to GEMM_EXACT only.)
template <int K, bool kNorm, int FMT_LO, int FMT_HI, typename StageRows>
__device__ __forceinline__ void gemm_tile(const StageRows& stage_rows, const i8* xq, const float2* xds, const float* xss,
                                          float eps, int nt, GemmShared& sh) {
  float acc[2][2][4];
RAYO_UNROLL
  for (int mi = 0; mi < 2; ++mi)
RAYO_UNROLL
    for (int ni = 0; ni < 2; ++ni)
RAYO_UNROLL
      for (int i = 0; i < 4; ++i) acc[mi][ni][i] = 0.0f;
  for (int kc = 0; kc < (K + GEMM_K - 1) / GEMM_K; ++kc) {
    __syncthreads();  // the previous chunk's multiply is done with the tiles
    stage_rows(kc);
    gemm_stage_tokens<K>(xq, xds, nt, kc, sh);
    __syncthreads();
    gemm_mma_chunk(sh, acc);
  }
  __syncthreads();
  gemm_tile_results<K, kNorm>(acc, xss, eps, nt, sh);
}
}  // namespace gemm_f16

#include "gemm_exact.cuh"
