// The float work of the int8 GEMM tile for prompts (gemm_int8.cuh's
// gemm_int8 namespace), per format: turning a unit's segment sums into its
// outputs' addends. The exact tile keeps each format's Gpu<FMT>::combine, so
// that its sums stay the GEMV's bits.
//
// The tensor cores give a unit's segment sums (int32) for each (row, token),
// and the combine runs once per output and unit: 16 times a thread and unit
// against 16 MMAs, so it, not the MMAs, sets the tile's pace. Where a
// format's combine multiplies its scales out per output (the 6-bit scales
// and mins of Q4_K, Q5_K and IQ4_XS, Q2_K's nibbles), TileScales<FMT>::of
// multiplies them out once per unit and row as the unit is decoded (kept in
// the stage's Meta slots), and add puts each group's term (the segments that
// share a scale and an activation block) into the output with one
// conversion, one multiply and one FMA. The others keep their combine:
// the 32-value formats' and Q3_K's take no more, and Q6_K's integer scales
// cost least applied to its integer sums (its lanes are q - 32 in the tile,
// so it needs no activation sums: gemm_int8.cuh). Conversions stay
// conversions: sm_90 issues them as I2FP, which a bit trick (an integer add
// into a float's mantissa and a float subtraction) only made slower (NVRTC
// 13: a Q6_K unit 261 -> 300 instructions a thread, Q4_0 81 -> 109).
#pragma once
#include "weight_formats.cuh"

// acc += a * (dx * s): a the row's scale, dx the activation block's, s a group's sum.
__device__ __forceinline__ void add_group(float& acc, float a, float dx, int s) {
  acc = fmaf(a, dx * static_cast<float>(s), acc);
}

// By default a unit's Meta and its format's combine (for formats whose tile
// combine needs no activation sums).
template <int FMT>
struct TileScales {
  static_assert(!Gpu<FMT>::kXSums || FMT == FMT_Q6_K, "a combine that takes activation sums has its TileScales");
  using Scales = typename Gpu<FMT>::Meta;
  __device__ static Scales of(const Scales& m) { return m; }
  __device__ static void add(float& acc, const Scales& m, const int* seg, const float*, const float2* ds) {
    const int no_sums[4] = {0, 0, 0, 0};
    acc += Gpu<FMT>::combine(m, seg, no_sums, ds);
  }
};

// Q4_K, Q5_K, IQ4_XS: two sub-blocks of 32 (segments 0, 1 and 2, 3), each
// with its scale and (Q4_K, Q5_K) its min, and its activation block.
template <int FMT, bool kMins>
struct SubBlockScales {
  struct Scales {
    float a[2], b[2];
  };
  __device__ static Scales of(const typename Gpu<FMT>::Meta& m) {
    Scales s;
    Gpu<FMT>::affine(m, 0, s.a[0], s.b[0]);
    Gpu<FMT>::affine(m, 2, s.a[1], s.b[1]);
    return s;
  }
  __device__ static void add(float& acc, const Scales& s, const int* seg, const float*, const float2* ds) {
RAYO_UNROLL
    for (int g = 0; g < 2; ++g) {
      add_group(acc, s.a[g], ds[g].x, seg[2 * g] + seg[2 * g + 1]);
      if (kMins) acc = fmaf(s.b[g], ds[g].y, acc);
    }
  }
};
template <>
struct TileScales<FMT_Q4_K> : SubBlockScales<FMT_Q4_K, true> {};
template <>
struct TileScales<FMT_Q5_K> : SubBlockScales<FMT_Q5_K, true> {};
template <>
struct TileScales<FMT_IQ4_XS> : SubBlockScales<FMT_IQ4_XS, false> {};

// Q2_K: a scale and a min per segment of 16, segment j in activation block
// j; the min's term takes the segment's activation sum times dx, staged per
// token (xsum).
template <>
struct TileScales<FMT_Q2_K> {
  struct Scales {
    float a[4], b[4];
  };
  __device__ static Scales of(const typename Gpu<FMT_Q2_K>::Meta& m) {
    Scales s;
RAYO_UNROLL
    for (int j = 0; j < 4; ++j) Gpu<FMT_Q2_K>::affine(m, j, s.a[j], s.b[j]);
    return s;
  }
  __device__ static void add(float& acc, const Scales& s, const int* seg, const float* xsum, const float2* ds) {
RAYO_UNROLL
    for (int j = 0; j < 4; ++j) {
      add_group(acc, s.a[j], ds[j].x, seg[j]);
      acc = fmaf(s.b[j], xsum[j], acc);
    }
  }
};
