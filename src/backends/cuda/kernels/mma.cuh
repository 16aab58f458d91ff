// Tensor-core matrix multiply-accumulate: the one mma.sync shape the GEMMs use,
// as inline PTX, with its emulated twin for the SIMT emulator.
//
// mma_16816: D = A * B + C for a 16 x 8 tile with K = 16, f16 inputs and f32
// accumulators (mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32). Each lane
// (g = lane / 4, t = lane % 4) holds, two halves per register, low half first:
//   a[0] = A[g][2t, 2t+1]     a[1] = A[g+8][2t, 2t+1]
//   a[2] = A[g][2t+8, 2t+9]   a[3] = A[g+8][2t+8, 2t+9]
//   b[0] = B[2t, 2t+1][g]     b[1] = B[2t+8, 2t+9][g]
//   c[0], c[1] = C[g][2t, 2t+1]   c[2], c[3] = C[g+8][2t, 2t+1]
// Every lane of the warp must call it together (it is a warp-wide instruction).
#pragma once
#include "common.cuh"

#ifdef RAYO_SIMT
__device__ __forceinline__ u32 pack_half2(float lo, float hi) {
  return static_cast<u32>(f2h(lo)) | (static_cast<u32>(f2h(hi)) << 16);
}
__device__ __forceinline__ void mma_16816(float* c, const u32* a, const u32* b) { simt::mma_f16_m16n8k16(c, a, b); }
#else
// Two floats as one f16x2 word, lo in the low half, each rounded to nearest even
// (cvt.rn.f16x2.f32 puts its first source in the high half).
__device__ __forceinline__ u32 pack_half2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ void mma_16816(float* c, const u32* a, const u32* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif
