// 8-bit activations: the "q8 twin" of an f32 activation matrix, which the
// quantized GEMVs read (weight_formats.cuh), and the row statistics of an
// RMSNorm's input. Producers write them in their epilogues (the step's norm is
// computed once, by whoever writes the row), consumers read them.
//
// For [rows][K] f32 values x (K % 32 == 0 for the q8 part):
//   q  [rows][K] int8     q = round-to-nearest-even(v * 127 / amax) per block of 32,
//   ds [rows][K/32] float2 (d, s): d = amax / 127, s = d * sum(q) (for the
//                          weights' zero points and mins),
// where v = x, or x * norm_w when the consumer is a fused RMSNorm+MatMul: the
// norm's 1/rms factor is a per-row scalar, which the consumer applies to its
// sums, so the quantization needs no row-wide reduction first.
//   ss [rows][ceil(K/32)] f32: the sum of x^2 over each block of 32 columns (the
//                          last one partial): 1/rms = 1/sqrt(sum ss / K + eps),
//                          summed by every consumer in the same fixed order.
// As cpu::quantize_act32 (matmul_activations.h), with the scale per 32 values.
#pragma once
#include "common.cuh"

// Integer sum over a warp.
__device__ __forceinline__ int warp_sum_int(int v) {
RAYO_UNROLL
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
  return v;
}

// The parts of row t of the twin of a K-column activation (absent parts: nullptr).
using TwinRow = TwinOut;
template <long long K>
__device__ __forceinline__ TwinRow twin_row(i8* q, float2* ds, float* ss, long long t) {
  return TwinRow{q ? q + t * K : nullptr, ds ? ds + t * (K / 32) : nullptr, ss ? ss + t * ((K + 31) / 32) : nullptr};
}
// Row t of the twin `out`, with only the parts a variant writes (kQ8: q and
// ds; kSs: the statistics), the others null. `out` is taken by value: a
// reference to a field of a kernel's argument would make the compiler copy
// the whole argument struct to local memory.
template <long long K, bool kQ8, bool kSs>
__device__ __forceinline__ TwinRow twin_row(TwinOut out, long long t) {
  return twin_row<K>(kQ8 ? out.q : nullptr, kQ8 ? out.ds : nullptr, kSs ? out.ss : nullptr, t);
}

// Block g of a row's twin from a warp: lane l holds column 32g + l (0 past the
// row's end); nw is that column's norm weight (ignored without a norm). Writes
// the q8 block when q != nullptr and the block's sum of squares when ss != nullptr.
// Every lane of the warp must call it.
template <bool kNorm>
__device__ __forceinline__ void emit_block32(float x, float nw, int g, i8* q, float2* ds, float* ss) {
  const int lane = threadIdx.x % WARP;
  if (ss) {
    const float sum_sq = warp_sum(x * x);
    if (lane == 0) ss[g] = sum_sq;
  }
  if (q) {
    const float v = kNorm ? x * nw : x;
    const float amax = warp_max(fabsf(v));
    const float iscale = amax > 0.0f ? 127.0f / amax : 0.0f;
    const int qi = __float2int_rn(v * iscale);
    q[32 * g + lane] = static_cast<i8>(qi);
    const int sum = warp_sum_int(qi);
    if (lane == 0) {
      const float d = amax / 127.0f;
      ds[g] = make_float2(d, d * static_cast<float>(sum));
    }
  }
}

// 1/rms of a row of K values from its ss blocks (+ eps), as the RMSNorm op
// would scale it. Every lane of the warp must call it; all get the value.
template <int K>
__device__ __forceinline__ float inv_rms(const float* ss, float eps) {
  constexpr int kBlocks = (K + 31) / 32;
  float s = 0.0f;
  for (int g = threadIdx.x % WARP; g < kBlocks; g += WARP) s += ss[g];
  s = warp_sum(s);
  return 1.0f / sqrtf(s / static_cast<float>(K) + eps);
}

// The twin of a whole row of K values (row, already written and visible to the
// block) from a block of kThreads threads: warp w writes blocks w, w + kThreads/32, ...
// of `out` (absent parts are not written). Every thread must call it.
template <int K, int kThreads, bool kNorm>
__device__ __forceinline__ void emit_twin_row(const float* row, const float* norm_w, const TwinRow& out) {
  constexpr int kBlocks = (K + 31) / 32;
  const int lane = threadIdx.x % WARP;
  for (int g = threadIdx.x / WARP; g < kBlocks; g += kThreads / WARP) {
    const int c = 32 * g + lane;
    const float v = c < K ? row[c] : 0.0f;
    const float nw = kNorm && c < K ? norm_w[c] : 0.0f;
    emit_block32<kNorm>(v, nw, g, out.q, out.ds, out.ss);
  }
}
