// Matrix-vector products over quantized weights, shared by gemv.cu,
// gemv_swiglu.cu and qkv_rope_store.cu.
//
// Math: weights are decoded to f32 on the fly (load8 in common.cuh) and
// multiplied by the f32 activations with f32 accumulation. At batch 1 a GEMV is
// bound by the bandwidth of reading the weights; the decode costs a few integer
// ops per value and keeps the result equal to the CPU reference's dequantized
// weights times the unquantized activations (no 8-bit activation rounding).
//
// Work split: one warp per output row (or row pair); lane l reads the groups of
// 8 values l, l+32, l+64, ... of the row, so a warp reads 32 consecutive groups
// (for Q4_K: 128 consecutive bytes of nibbles) per step. A block holds
// GEMV_WARPS warps and kTile token rows share every weight group it decodes.
#pragma once
#include "common.cuh"

#define GEMV_WARPS 4
#define GEMV_THREADS (GEMV_WARPS * WARP)

// The RMSNorm factors 1/sqrt(mean(x^2) + eps) of the token rows t < nt of x (K
// values each) into inv[kTile] (shared). All threads of the block must call it.
template <int K, int kTile>
__device__ __forceinline__ void block_inv_rms(const float* x, int nt, float eps, float* inv, float* scratch) {
RAYO_UNROLL
  for (int t = 0; t < kTile; ++t) {
    float s = 0.0f;
    if (t < nt)
      for (int i = threadIdx.x; i < K; i += GEMV_THREADS) s += x[t * K + i] * x[t * K + i];
    s = block_sum<GEMV_THREADS>(s, scratch);
    if (threadIdx.x == 0) inv[t] = 1.0f / sqrtf(s / static_cast<float>(K) + eps);
  }
  __syncthreads();
}

// acc[t] += W[row] . x[t] for t < nt (x: kTile rows of K values). When kNorm, x is
// first normalised: x * inv[t] * norm_w (as the RMSNorm op would have written it).
// Every lane returns the full sums.
template <int FMT, int K, int kTile, bool kNorm>
__device__ __forceinline__ void row_dot(const u8* wrow, const float* x, int nt, const float* norm_w, const float* inv,
                                        float* acc) {
  const int lane = threadIdx.x % WARP;
  for (int g = lane; g < K / 8; g += WARP) {
    float w[8];
    load8<FMT>(wrow, g, w);
RAYO_UNROLL
    for (int t = 0; t < kTile; ++t) {
      if (t < nt) {
        const float* xr = x + t * K + 8 * g;
RAYO_UNROLL
        for (int i = 0; i < 8; ++i) {
          float xv = xr[i];
          if (kNorm) xv = xv * inv[t] * norm_w[8 * g + i];
          acc[t] += w[i] * xv;
        }
      }
    }
  }
  if constexpr (K % 8 != 0) {  // float formats only: the last K % 8 values
    for (int k = (K / 8) * 8 + lane; k < K; k += WARP) {
      const float w = load1<FMT>(wrow, k);
      for (int t = 0; t < nt; ++t) {
        float xv = x[t * K + k];
        if (kNorm) xv = xv * inv[t] * norm_w[k];
        acc[t] += w * xv;
      }
    }
  }
RAYO_UNROLL
  for (int t = 0; t < kTile; ++t) acc[t] = warp_sum(acc[t]);
}
