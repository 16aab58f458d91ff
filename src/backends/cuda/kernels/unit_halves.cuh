#pragma once
// A quantized unit's values as f16 (weights in their GPU layout,
// weight_formats.cuh): what the f16 GEMM tile (gemm.cuh) decodes into shared
// memory, and what decode_f16.cu writes of a whole matrix for the dense GEMM,
// so that both multiply the same f16 weights.
#include "mma.cuh"
#include "weight_formats.cuh"

// Lane n (0..3) of 4 int8 lanes x, exactly, as a float, given x ^ 0x80808080:
// that byte (the lane + 128, 0..255) goes into the low mantissa of 2^23, so
// one byte permutation and one subtraction do what a byte extraction and an
// int-to-float conversion (a quarter-rate instruction for bytes) would.
__device__ __forceinline__ float lane_exact(u32 biased, int n) {
  return __uint_as_float(__byte_perm(biased, 0x4B000000u, 0x7440u | static_cast<u32>(n))) - 8388736.0f;
}

// The unit's values as f16 pairs, 8 values (a 16-byte piece) per uint4:
// piece p holds values 8p .. 8p + 7, which lie at Gpu<FMT>::offset(uc, 8p) on
// (runs of 16 or more, so a piece never straddles two). Value = f16(a * lane +
// b), a and b the segment's (Gpu<FMT>::affine), with one rounding in the FMA:
// the bits of d * q - n however the format writes its dequantization.
template <int FMT>
__device__ __forceinline__ void unit_halves(const typename Gpu<FMT>::Unit& w, uint4* pieces) {
  using F = Gpu<FMT>;
  int q[F::kUnit / 4];
  F::ints(w, q);
  const typename F::Meta m = F::meta(w);
RAYO_UNROLL
  for (int s = 0; s < F::kUnit / 16; ++s) {
    float a, b;
    F::affine(m, s, a, b);
RAYO_UNROLL
    for (int p = 0; p < 2; ++p) {
      const u32 lo = static_cast<u32>(q[4 * s + 2 * p]) ^ 0x80808080u;
      const u32 hi = static_cast<u32>(q[4 * s + 2 * p + 1]) ^ 0x80808080u;
      auto v = [&](u32 x, int n) { return fmaf(a, lane_exact(x, n), b); };
      pieces[2 * s + p] = make_uint4(pack_half2(v(lo, 0), v(lo, 1)), pack_half2(v(lo, 2), v(lo, 3)),
                                     pack_half2(v(hi, 0), v(hi, 1)), pack_half2(v(hi, 2), v(hi, 3)));
    }
  }
}
