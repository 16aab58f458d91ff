// Shared helpers of rayo's CUDA kernels. Plain CUDA C++ that needs no toolkit
// header: NVRTC compiles it as is, and the SIMT emulator (tests/support/simt)
// compiles it as C++ with RAYO_SIMT defined, which then supplies the few
// intrinsics written here as inline PTX.
//
// Everything in this header is independent of the shape macros (HEAD_DIM, COLS,
// ...) so that the emulator tests can include a kernel file several times with
// different shapes while this header is included once.
#pragma once

#ifdef RAYO_SIMT
#define RAYO_KERNEL [[maybe_unused]] static void
#define RAYO_LAUNCH_BOUNDS(n)
#define RAYO_LAUNCH_BOUNDS_MIN(n, blocks)
#define RAYO_UNROLL
#define RAYO_UNROLL_4
#else
#define RAYO_UNROLL _Pragma("unroll")
// A loop of many iterations whose full unrolling would spill (a trip count
// known at compile time, such as 1500 frames).
#define RAYO_UNROLL_4 _Pragma("unroll 4")
#define RAYO_KERNEL extern "C" __global__ void
#define RAYO_LAUNCH_BOUNDS(n) __launch_bounds__(n)
// With a minimum of resident blocks per SM: 1 leaves ptxas every register a
// block of n threads can have (it otherwise stops at 128 and spills).
#define RAYO_LAUNCH_BOUNDS_MIN(n, blocks) __launch_bounds__(n, blocks)
#endif

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef signed char i8;

#include "kernel_args.cuh"

// ggml type ids (quant/tensor_type.h): the WTYPE macros of the kernels use them.
#define FMT_F32 0
#define FMT_F16 1
#define FMT_Q4_0 2
#define FMT_Q4_1 3
#define FMT_Q5_0 6
#define FMT_Q5_1 7
#define FMT_Q8_0 8
#define FMT_Q2_K 10
#define FMT_Q3_K 11
#define FMT_Q4_K 12
#define FMT_Q5_K 13
#define FMT_Q6_K 14
#define FMT_IQ4_NL 20
#define FMT_IQ4_XS 23
#define FMT_BF16 30

#define WARP 32
#define FULL_MASK 0xffffffffu

#ifndef RAYO_SIMT
// IEEE half <-> float with the hardware conversions (round to nearest even).
__device__ __forceinline__ float h2f(u16 h) {
  float f;
  asm("{ .reg .b16 t; mov.b16 t, %1; cvt.f32.f16 %0, t; }" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ u16 f2h(float f) {
  u16 h;
  asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; mov.b16 %0, t; }" : "=h"(h) : "f"(f));
  return h;
}
#endif

// Programmatic dependent launch (sm_90): the backend launches each kernel
// with programmatic stream serialization, so that a kernel's blocks can be
// scheduled while its predecessor's last blocks still run, instead of after a
// launch gap. Every kernel calls grid_dependency_wait() first, before it reads
// anything and before any early return: it waits until the previous kernel
// has finished and its writes are visible. (A block that returned without
// waiting could let its grid end before its predecessor, and the kernel after
// it read stale data.) The next kernel launches when every block of this one
// has called allow_dependent_launch() or ended: the GEMVs call it once their
// weights are read, so that the next kernel's blocks take SM slots only as
// this one ends, and only one kernel ahead. Measured as written (H100, two
// interleaved rounds, docs/gpu-log.md): qwen2.5-1.5b Q4_K_M tg128 727 ->
// 746-751 t/s, llama3-8b 365-366 -> 361-364, so the backend leaves it off by
// default (CudaOptions). On sm_80, without the launch attribute, or in the
// emulator (one kernel at a time) both do nothing.
__device__ __forceinline__ void grid_dependency_wait() {
#if !defined(RAYO_SIMT) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_dependent_launch() {
#if !defined(RAYO_SIMT) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

#ifndef INFINITY  // NVRTC has no math.h
#define INFINITY __int_as_float(0x7f800000)
#endif

__device__ __forceinline__ float bf2f(u16 h) { return __uint_as_float(static_cast<u32>(h) << 16); }

__device__ __forceinline__ float warp_sum(float v) {
RAYO_UNROLL
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
RAYO_UNROLL
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
  return v;
}

// p + n, or nullptr for nullptr (an unused pointer of a kernel's arguments).
template <typename T>
__device__ __forceinline__ T* offset(T* p, long long n) {
  return p ? p + n : p;
}

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }
// GELU with the tanh approximation, as x / (1 + e^(-2u)) = x/2 (1 + tanh u),
// u = sqrt(2/pi) x (1 + 0.044715 x^2): the CPU backend's formula (ops.cpp).
__device__ __forceinline__ float gelu_tanh(float x) {
  return x / (1.0f + expf(-2.0f * 0.79788456080286535588f * x * (1.0f + 0.044715f * x * x)));
}
// The gate activation of a gated FFN (gemv_swiglu.cu, gemm_swiglu.cu,
// elementwise.cu swiglu): SiLU, or GELU-tanh (Gemma's GeGLU) for kernels built
// with GELU=1, which call gate_act<GELU != 0> (the macro is theirs: this file
// is read once however many kernels an emulator test compiles).
template <bool Gelu>
__device__ __forceinline__ float gate_act(float x) {
  return Gelu ? gelu_tanh(x) : silu(x);
}

// Unaligned little-endian loads: GGUF blocks of 18, 22, 34, ... bytes leave
// their fields at any byte offset, so read bytes.
__device__ __forceinline__ u16 ld_u16(const u8* p) { return static_cast<u16>(p[0] | (p[1] << 8)); }
__device__ __forceinline__ u32 ld_u32(const u8* p) {
  return static_cast<u32>(p[0]) | (static_cast<u32>(p[1]) << 8) | (static_cast<u32>(p[2]) << 16) |
         (static_cast<u32>(p[3]) << 24);
}

// ---------------------------------------------------------------------------
// Weight decoding: load8<FMT>(row, g, v) writes values 8g..8g+7 of a row stored
// in format FMT, exactly as the reference dequantizer (quant/dequantize.cpp)
// computes them (same float operations in the same order; the CUDA build is
// compiled with --fmad=false for this file's callers where bit-exactness matters).
// A group of 8 never straddles a block or a sub-block of any format, so every
// scale is decoded once per group. Layouts (ggml, byte for byte, quant/blocks.h):
//   Q4_0  18 B / 32: f16 d, 16 B nibbles (value j<16 low nibble of qs[j], j>=16 high of qs[j-16])
//   Q4_1  20 B / 32: f16 d, f16 m, nibbles as Q4_0
//   Q5_0  22 B / 32: f16 d, u32 qh (bit j = fifth bit of value j), nibbles
//   Q5_1  24 B / 32: f16 d, f16 m, qh, nibbles
//   Q8_0  34 B / 32: f16 d, 32 x i8
//   Q2_K  84 B / 256: 16 scale bytes, 64 B of 2-bit q, f16 d, f16 dmin
//   Q3_K 110 B / 256: 32 B hmask, 64 B 2-bit q, 12 B 6-bit scales, f16 d
//   Q4_K 144 B / 256: f16 d, f16 dmin, 12 B scales/mins, 128 B nibbles
//   Q5_K 176 B / 256: as Q4_K + 32 B qh before the nibbles
//   Q6_K 210 B / 256: 128 B ql, 64 B qh, 16 x i8 scales, f16 d
//   IQ4_NL  18 B / 32: f16 d, 16 B nibbles as Q4_0, each an index into the 16 levels
//   IQ4_XS 136 B / 256: f16 d, u16 scales_h, 4 B scales_l (the 8 sub-blocks' 6-bit
//                       scales, less 32), 128 B nibbles (sub-block s's 16 bytes as
//                       an IQ4_NL block's)
// ---------------------------------------------------------------------------

template <int FMT>
struct Fmt;
template <> struct Fmt<FMT_F32> { static constexpr int block = 1, bytes = 4; };
template <> struct Fmt<FMT_F16> { static constexpr int block = 1, bytes = 2; };
template <> struct Fmt<FMT_BF16> { static constexpr int block = 1, bytes = 2; };
template <> struct Fmt<FMT_Q4_0> { static constexpr int block = 32, bytes = 18; };
template <> struct Fmt<FMT_Q4_1> { static constexpr int block = 32, bytes = 20; };
template <> struct Fmt<FMT_Q5_0> { static constexpr int block = 32, bytes = 22; };
template <> struct Fmt<FMT_Q5_1> { static constexpr int block = 32, bytes = 24; };
template <> struct Fmt<FMT_Q8_0> { static constexpr int block = 32, bytes = 34; };
template <> struct Fmt<FMT_Q2_K> { static constexpr int block = 256, bytes = 84; };
template <> struct Fmt<FMT_Q3_K> { static constexpr int block = 256, bytes = 110; };
template <> struct Fmt<FMT_Q4_K> { static constexpr int block = 256, bytes = 144; };
template <> struct Fmt<FMT_Q5_K> { static constexpr int block = 256, bytes = 176; };
template <> struct Fmt<FMT_Q6_K> { static constexpr int block = 256, bytes = 210; };
template <> struct Fmt<FMT_IQ4_NL> { static constexpr int block = 32, bytes = 18; };
template <> struct Fmt<FMT_IQ4_XS> { static constexpr int block = 256, bytes = 136; };

// Bytes of a row of n values.
template <int FMT>
__device__ __forceinline__ long long fmt_row_bytes(long long n) {
  return n / Fmt<FMT>::block * Fmt<FMT>::bytes;
}

// The 6-bit scale and min of sub-block j of a Q4_K/Q5_K block (quant/k_scales.h).
__device__ __forceinline__ void scale_min_k4(int j, const u8* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// The 16 levels of IQ4_NL and IQ4_XS (quant/blocks.h: kIq4nlValues) as int8
// bytes, four to a word, little endian: levels 0..7 (all negative) in words 0
// and 1, levels 8..15 in words 2 and 3.
#define IQ4_LEVELS_0 0xBFAD9881u  // -127 -104  -83  -65
#define IQ4_LEVELS_1 0xF6EADDCFu  //  -49  -35  -22  -10
#define IQ4_LEVELS_2 0x26190D01u  //    1   13   25   38
#define IQ4_LEVELS_3 0x71594535u  //   53   69   89  113

// The levels of the 8 4-bit indices of v as int8 lanes: lo[n] = level[low
// nibble of byte n], hi[n] = level[high nibble of byte n] (the nibble order of
// Q4_0 blocks: values n and n + 16). A byte permutation (__byte_perm, PTX
// prmt) looks up 4 indices at once, each selector nibble naming one byte of 8:
// the low 3 bits of an index select within the half of the table its bit 3
// names. So each run of 4 nibbles (bytes 0..1 of v, then bytes 2..3) is looked
// up in both halves with bit 3 cleared (__byte_perm ignores it, a bare prmt
// would read it as "the byte's sign"; the selectors' upper 16 bits are zero as
// well), the two results are merged byte by byte by bit 3 (selector n, or
// n + 4 for the upper half), and the lookups, which hold a byte's two nibbles
// side by side, are split into low and high nibbles.
__device__ __forceinline__ void iq4_levels(u32 v, int* lo, int* hi) {
  const u32 s01 = v & 0x7777u, s23 = (v >> 16) & 0x7777u;
  const u32 m01 = 0x3210u | ((v >> 1) & 0x4444u), m23 = 0x3210u | ((v >> 17) & 0x4444u);
  // Levels of the nibbles of bytes 0..1 (l0 h0 l1 h1) and of bytes 2..3 (l2 h2 l3 h3).
  const u32 b01 = __byte_perm(__byte_perm(IQ4_LEVELS_0, IQ4_LEVELS_1, s01),
                              __byte_perm(IQ4_LEVELS_2, IQ4_LEVELS_3, s01), m01);
  const u32 b23 = __byte_perm(__byte_perm(IQ4_LEVELS_0, IQ4_LEVELS_1, s23),
                              __byte_perm(IQ4_LEVELS_2, IQ4_LEVELS_3, s23), m23);
  *lo = static_cast<int>(__byte_perm(b01, b23, 0x6420u));
  *hi = static_cast<int>(__byte_perm(b01, b23, 0x7531u));
}

// Lane n (0..3) of 4 int8 lanes, as a float.
__device__ __forceinline__ float lane_float(int lanes, int n) {
  return static_cast<float>(static_cast<i8>((static_cast<u32>(lanes) >> (8 * n)) & 0xFF));
}

template <int FMT>
__device__ __forceinline__ void load8(const u8* row, int g, float* v);

template <>
__device__ __forceinline__ void load8<FMT_F32>(const u8* row, int g, float* v) {
  const float* p = reinterpret_cast<const float*>(row) + 8 * g;
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) v[i] = p[i];
}
template <>
__device__ __forceinline__ void load8<FMT_F16>(const u8* row, int g, float* v) {
  const u16* p = reinterpret_cast<const u16*>(row) + 8 * g;
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) v[i] = h2f(p[i]);
}
template <>
__device__ __forceinline__ void load8<FMT_BF16>(const u8* row, int g, float* v) {
  const u16* p = reinterpret_cast<const u16*>(row) + 8 * g;
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) v[i] = bf2f(p[i]);
}

// One value of a float-format row (the tails of rows whose length is not a
// multiple of 8; quantized rows are whole blocks of 32 or 256).
template <int FMT>
__device__ __forceinline__ float load1(const u8* row, int k) {
  if constexpr (FMT == FMT_F32) return reinterpret_cast<const float*>(row)[k];
  if constexpr (FMT == FMT_F16) return h2f(reinterpret_cast<const u16*>(row)[k]);
  if constexpr (FMT == FMT_BF16) return bf2f(reinterpret_cast<const u16*>(row)[k]);
  return 0.0f;
}

// The 32-value formats: block g/4, values j0..j0+7 of it.
template <>
__device__ __forceinline__ void load8<FMT_Q4_0>(const u8* row, int g, float* v) {
  const u8* b = row + (g >> 2) * 18;
  const int j0 = (g & 3) * 8;
  const float d = h2f(ld_u16(b));
  const u8* qs = b + 2 + (j0 & 15);
  const int shift = j0 >= 16 ? 4 : 0;
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) v[i] = static_cast<float>(((qs[i] >> shift) & 0xF) - 8) * d;
}
template <>
__device__ __forceinline__ void load8<FMT_Q4_1>(const u8* row, int g, float* v) {
  const u8* b = row + (g >> 2) * 20;
  const int j0 = (g & 3) * 8;
  const float d = h2f(ld_u16(b)), m = h2f(ld_u16(b + 2));
  const u8* qs = b + 4 + (j0 & 15);
  const int shift = j0 >= 16 ? 4 : 0;
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) v[i] = static_cast<float>((qs[i] >> shift) & 0xF) * d + m;
}
template <>
__device__ __forceinline__ void load8<FMT_Q5_0>(const u8* row, int g, float* v) {
  const u8* b = row + (g >> 2) * 22;
  const int j0 = (g & 3) * 8;
  const float d = h2f(ld_u16(b));
  const u32 qh = ld_u32(b + 2);
  const u8* qs = b + 6 + (j0 & 15);
  const int shift = j0 >= 16 ? 4 : 0;
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) {
    const int q = ((qs[i] >> shift) & 0xF) | (static_cast<int>((qh >> (j0 + i)) & 1) << 4);
    v[i] = static_cast<float>(q - 16) * d;
  }
}
template <>
__device__ __forceinline__ void load8<FMT_Q5_1>(const u8* row, int g, float* v) {
  const u8* b = row + (g >> 2) * 24;
  const int j0 = (g & 3) * 8;
  const float d = h2f(ld_u16(b)), m = h2f(ld_u16(b + 2));
  const u32 qh = ld_u32(b + 4);
  const u8* qs = b + 8 + (j0 & 15);
  const int shift = j0 >= 16 ? 4 : 0;
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) {
    const int q = ((qs[i] >> shift) & 0xF) | (static_cast<int>((qh >> (j0 + i)) & 1) << 4);
    v[i] = static_cast<float>(q) * d + m;
  }
}
template <>
__device__ __forceinline__ void load8<FMT_Q8_0>(const u8* row, int g, float* v) {
  const u8* b = row + (g >> 2) * 34;
  const float d = h2f(ld_u16(b));
  const i8* qs = reinterpret_cast<const i8*>(b + 2 + (g & 3) * 8);
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) v[i] = static_cast<float>(qs[i]) * d;
}

// The k-quants: block g/32, value n0 = 8*(g%32) within its 256.
template <>
__device__ __forceinline__ void load8<FMT_Q2_K>(const u8* row, int g, float* v) {
  const u8* b = row + (g >> 5) * 84;
  const int n0 = (g & 31) * 8;
  const int half = n0 >> 7, r = n0 & 127, k = r >> 5, l0 = r & 31;
  const int sc = b[half * 8 + k * 2 + (l0 >= 16)];
  const float d = h2f(ld_u16(b + 80)), dmin = h2f(ld_u16(b + 82));
  const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
  const u8* q = b + 16 + half * 32 + l0;
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) {
    const float x = dl * static_cast<float>((q[i] >> (2 * k)) & 3);
    v[i] = x - ml;
  }
}
template <>
__device__ __forceinline__ void load8<FMT_Q3_K>(const u8* row, int g, float* v) {
  const u8* b = row + (g >> 5) * 110;
  const int n0 = (g & 31) * 8;
  const int half = n0 >> 7, r = n0 & 127, k = r >> 5, l0 = r & 31;
  const int sub = half * 8 + k * 2 + (l0 >= 16);
  const u8* sp = b + 96;
  const int low = sub < 8 ? (sp[sub] & 0xF) : (sp[sub - 8] >> 4);
  const int high = (sp[8 + sub % 4] >> (2 * (sub / 4))) & 3;
  const float dl = h2f(ld_u16(b + 108)) * static_cast<float>((low | (high << 4)) - 32);
  const u8* q = b + 32 + half * 32 + l0;
  const u8* hm = b + l0;
  const int mask = 1 << (half * 4 + k);
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) {
    const int x = ((q[i] >> (2 * k)) & 3) - ((hm[i] & mask) ? 0 : 4);
    v[i] = dl * static_cast<float>(x);
  }
}
template <>
__device__ __forceinline__ void load8<FMT_Q4_K>(const u8* row, int g, float* v) {
  const u8* b = row + (g >> 5) * 144;
  const int n0 = (g & 31) * 8;
  const int c = n0 >> 6, r = n0 & 63, hi = r >= 32, l0 = r & 31;
  int sc, m;
  scale_min_k4(2 * c + hi, b + 4, &sc, &m);
  const float d = h2f(ld_u16(b)) * static_cast<float>(sc), mn = h2f(ld_u16(b + 2)) * static_cast<float>(m);
  const u8* q = b + 16 + 32 * c + l0;
  const int shift = hi ? 4 : 0;
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) {
    const float x = d * static_cast<float>((q[i] >> shift) & 0xF);
    v[i] = x - mn;
  }
}
template <>
__device__ __forceinline__ void load8<FMT_Q5_K>(const u8* row, int g, float* v) {
  const u8* b = row + (g >> 5) * 176;
  const int n0 = (g & 31) * 8;
  const int c = n0 >> 6, r = n0 & 63, hi = r >= 32, l0 = r & 31;
  int sc, m;
  scale_min_k4(2 * c + hi, b + 4, &sc, &m);
  const float d = h2f(ld_u16(b)) * static_cast<float>(sc), mn = h2f(ld_u16(b + 2)) * static_cast<float>(m);
  const u8* qh = b + 16 + l0;
  const u8* q = b + 48 + 32 * c + l0;
  const int shift = hi ? 4 : 0;
  const int bit = 2 * c + hi;
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) {
    const int x = ((q[i] >> shift) & 0xF) + (((qh[i] >> bit) & 1) ? 16 : 0);
    const float y = d * static_cast<float>(x);
    v[i] = y - mn;
  }
}
template <>
__device__ __forceinline__ void load8<FMT_Q6_K>(const u8* row, int g, float* v) {
  const u8* b = row + (g >> 5) * 210;
  const int n0 = (g & 31) * 8;
  const int half = n0 >> 7, r = n0 & 127, k = r >> 5, l0 = r & 31;
  const u8* ql = b + 64 * half + l0 + ((k & 1) ? 32 : 0);
  const u8* qh = b + 128 + 32 * half + l0;
  const int shift = (k & 2) ? 4 : 0;
  const float d = h2f(ld_u16(b + 208));
  const float ds = d * static_cast<float>(reinterpret_cast<const i8*>(b + 192)[8 * half + (l0 >> 4) + 2 * k]);
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) {
    const int q = (((ql[i] >> shift) & 0xF) | (((qh[i] >> (2 * k)) & 3) << 4)) - 32;
    v[i] = ds * static_cast<float>(q);
  }
}

// IQ4_NL: nibbles as Q4_0's, each the index of a level: values 8i .. 8i+7 of a
// block (i = g % 4) are the levels of the low (i < 2) or high nibbles of its
// quant bytes 8 (i % 2) .. +7.
template <>
__device__ __forceinline__ void load8<FMT_IQ4_NL>(const u8* row, int g, float* v) {
  const u8* b = row + (g >> 2) * 18;
  const int j0 = (g & 3) * 8;
  const float d = h2f(ld_u16(b));
  const u8* qs = b + 2 + (j0 & 15);
  int lo[2], hi[2];
  iq4_levels(ld_u32(qs), &lo[0], &hi[0]);
  iq4_levels(ld_u32(qs + 4), &lo[1], &hi[1]);
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) v[i] = d * lane_float(j0 >= 16 ? hi[i / 4] : lo[i / 4], i % 4);
}
// IQ4_XS: sub-block s = n0 / 32 of block g / 32 as an IQ4_NL block of scale
// d * (its 6-bit scale - 32).
template <>
__device__ __forceinline__ void load8<FMT_IQ4_XS>(const u8* row, int g, float* v) {
  const u8* b = row + (g >> 5) * 136;
  const int n0 = (g & 31) * 8;
  const int s = n0 >> 5, r = n0 & 31;
  const int ls = ((b[4 + s / 2] >> (4 * (s % 2))) & 0xF) | (((ld_u16(b + 2) >> (2 * s)) & 3) << 4);
  const float dl = h2f(ld_u16(b)) * static_cast<float>(ls - 32);
  const u8* qs = b + 8 + 16 * s + (r & 15);
  int lo[2], hi[2];
  iq4_levels(ld_u32(qs), &lo[0], &hi[0]);
  iq4_levels(ld_u32(qs + 4), &lo[1], &hi[1]);
RAYO_UNROLL
  for (int i = 0; i < 8; ++i) v[i] = dl * lane_float(r >= 16 ? hi[i / 4] : lo[i / 4], i % 4);
}

// ---------------------------------------------------------------------------
// Rotary embedding angle of pair i at position pos, computed as the CPU backend
// does (ggml): theta = pos * theta_scale^i by repeated multiplication in float,
// divided by the pair's frequency factor, times freq_scale. theta_scale is
// computed once on the host (powf there) and passed as an exact literal, so the
// angle is bit-identical to the CPU's.
// ---------------------------------------------------------------------------
__device__ __forceinline__ float rope_angle(int pos, int i, float theta_scale, float freq_scale, float ff) {
  float theta = static_cast<float>(pos);
  for (int j = 0; j < i; ++j) theta *= theta_scale;
  return freq_scale * (theta / ff);
}

// The paged KV cache (graph/backend.h): position pos of sequence seq lives in
// cache row block_table[seq * max_blocks + pos / block_size] * block_size +
// pos % block_size; a layer's cache is [rows][kv_width] halves. A
// sliding-window layer that keeps a ring of `ring` blocks per sequence
// (KvCacheConfig::ring_blocks; the kernels' RING_BLOCKS) reads a table of
// one entry per sequence (max_blocks 1), its ring's first block, and position
// pos is in block block_table[seq] + (pos / block_size) % ring.
__device__ __forceinline__ long long kv_row(const int* block_table, int seq, int max_blocks, int pos, int block_size,
                                            int ring = 0) {
  const int b = pos / block_size;
  const int block = ring > 0 ? block_table[seq * max_blocks] + b % ring : block_table[seq * max_blocks + b];
  return static_cast<long long>(block) * block_size + pos % block_size;
}
// The cache row of token row t's position pos, in its sequence's table (kv by
// value, as twin_row's `out`: no copy of the kernel's argument to local memory).
__device__ __forceinline__ long long kv_row(KvPlaces kv, int t, int pos, int block_size, int ring = 0) {
  return kv_row(kv.block_table, kv.seq[t], *kv.max_blocks, pos, block_size, ring);
}

// Prompt attention on tensor cores (attention_prefill.cu) takes a step's rows in
// tiles of FA_TOKENS: a tile whose rows (t0 .. up to n) all belong to one
// sequence is its; attention.cu does every other row.
#define FA_TOKENS 16
__device__ __forceinline__ bool fa_tile_here(const int* seq, int t0, int n) {
  if (t0 >= n) return false;
  const int end = n - t0 < FA_TOKENS ? n : t0 + FA_TOKENS;
  for (int t = t0 + 1; t < end; ++t)
    if (seq[t] != seq[t0]) return false;
  return true;
}

// Block-wide sum for blocks of NT threads (a multiple of 32); `scratch` is
// shared storage of NT/32 floats. Every thread gets the total.
template <int NT>
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  v = warp_sum(v);
  const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = 0.0f;
RAYO_UNROLL
  for (int i = 0; i < NT / WARP; ++i) total += scratch[i];
  return total;
}
