// Tensor-core matrix multiply-accumulate: the mma.sync shapes the GEMMs use,
// as inline PTX, with their emulated twins for the SIMT emulator.
//
// mma_16816: D = A * B + C for a 16 x 8 tile with K = 16, f16 inputs and f32
// accumulators (mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32). Each lane
// (g = lane / 4, t = lane % 4) holds, two halves per register, low half first:
//   a[0] = A[g][2t, 2t+1]     a[1] = A[g+8][2t, 2t+1]
//   a[2] = A[g][2t+8, 2t+9]   a[3] = A[g+8][2t+8, 2t+9]
//   b[0] = B[2t, 2t+1][g]     b[1] = B[2t+8, 2t+9][g]
//   c[0], c[1] = C[g][2t, 2t+1]   c[2], c[3] = C[g+8][2t, 2t+1]
//
// mma_s8_16816: D = A * B + C for a 16 x 8 tile with K = 16, int8 inputs and
// int32 accumulators (mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32), exact.
// Four int8 lanes per register, lowest byte first:
//   a[0] = A[g][4t .. 4t+3]   a[1] = A[g+8][4t .. 4t+3]
//   b    = B[4t .. 4t+3][g]
//   c as above.
// ldmatrix_x4: four 8 x 8 matrices of 16-bit values from shared memory into
// fragments (ldmatrix.sync.aligned.m8n8.x4.shared.b16): lane l gives the
// address of row l % 8 of matrix l / 8 (16 contiguous bytes, 16-aligned), and
// r[j] of lane l receives matrix j's row l / 4, values 2 (l % 4), 2 (l % 4) + 1,
// the layout of a register of the fragments above: one instruction where
// 32-bit shared loads take four. ldm_a_* and ldm_b_* name the tile row and the
// 16-byte piece (of a pair) each lane addresses, for the GEMMs' two uses:
//   - a 16 x 16 A fragment (a[0..3]): matrices (rows +0, piece +0), (+8, +0),
//     (+0, +1), (+8, +1);
//   - two B fragments of 8 columns each (b[0..1] of columns +0, then of +8),
//     stored as rows: matrices (rows +0, piece +0), (+0, +1), (+8, +0),
//     (+8, +1).
// (A piece is 8 halves, or 16 int8 values: one segment of mma_s8_16816.)
//
// Every lane of the warp must call them together (warp-wide instructions).
#pragma once
#include "async_copy.cuh"

__device__ __forceinline__ int ldm_a_row(int lane) { return lane % 16; }
__device__ __forceinline__ int ldm_a_piece(int lane) { return lane / 16; }
__device__ __forceinline__ int ldm_b_row(int lane) { return lane % 8 + 8 * (lane / 16); }
__device__ __forceinline__ int ldm_b_piece(int lane) { return (lane / 8) % 2; }

#ifdef RAYO_SIMT
__device__ __forceinline__ u32 pack_half2(float lo, float hi) {
  return static_cast<u32>(f2h(lo)) | (static_cast<u32>(f2h(hi)) << 16);
}
__device__ __forceinline__ void mma_16816(float* c, const u32* a, const u32* b) { simt::mma_f16_m16n8k16(c, a, b); }
__device__ __forceinline__ void mma_s8_16816(int* c, const u32* a, u32 b) { simt::mma_s8_m16n8k16(c, a, b); }
__device__ __forceinline__ void ldmatrix_x4(u32* r, const void* row) { simt::ldmatrix_x4(r, row); }
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
__device__ __forceinline__ void mma_s8_16816(int* c, const u32* a, u32 b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(b));
}
__device__ __forceinline__ void ldmatrix_x4(u32* r, const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row))
               : "memory");
}
#endif
