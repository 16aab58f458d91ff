// Quantized weights in their GPU layouts (backends/cuda/weight_layout.h: each
// block split into 256-byte-aligned planes, the quants in plane 0 at 16-byte
// multiples) and their dot products with 8-bit activations (q8_act.cuh) by
// DP4A, for the GEMV kernels (gemv.cuh).
//
// The unit of work is a `unit` of 32 or 64 consecutive-or-interleaved values of
// a row: what one lane decodes per step. load_unit reads a unit of a row
// with 16-byte streaming loads, load_act reads the matching activations of one
// token, unit_dot multiplies them. Units of the 256-value formats are:
//   Q4_K, Q5_K  j = 0..3: values 64j .. 64j+63 (nibbles qs[32j .. 32j+31], low then high)
//   IQ4_XS      j = 0..3: values 64j .. 64j+63, sub-blocks 2j and 2j+1 (qs[32j .. 32j+15]
//                         low then high nibbles, then qs[32j+16 .. 32j+31] likewise)
//   Q6_K        (h, a):   values 128h+32a+[0,32) (low nibbles of ql[64h+32a..]) and
//                         128h+64+32a+[0,32) (their high nibbles); qh[32h..32h+31] bits
//   Q2_K, Q3_K  (h, i):   values 128h+32j+16i+[0,16) for j = 0..3 (the 2-bit quants
//                         in bits 2j of qs[32h+16i .. +15])
// and of the 32-value formats one block. Each dot equals the reference
// dequantizer's values times the dequantized activations, summed (in integer
// per sub-block, then in float).
//
// A dot product has two parts, which the int8 tensor-core GEMMs (gemm.cuh,
// GEMM_EXACT) share with the GEMVs so that both give the same bits:
//   - integer: Gpu<FMT>::ints gives the unit's weights as int8 lanes in the
//     order of its activations (Act::q) (Q6_K's plus 32: its combine takes 32
//     times the activations' sums off), and the sums of their products are
//     taken per segment of 16 values (4 ints), exactly, by DP4A or by MMA.
//     With kPairedSegments, segments 2i and 2i + 1 share their scales and
//     combine reads only their sum, which an MMA chain may hand it whole
//     (segment 2i + 1's sum then 0);
//   - float: Gpu<FMT>::combine turns the segment sums (and, for kXSums formats,
//     the segments' sums of activations) into the result, from the unit's
//     scales (Gpu<FMT>::Meta: decoded once per unit by Gpu<FMT>::meta, so
//     that a GEMM's outputs share the decoding) and the activations' (d, s)
//     pairs. A lane's unit index, and so which scale bytes it needs, differs
//     from lane to lane: meta selects and shifts whole words rather than
//     branch on it (divergent branches made the scale decoding 600 of the
//     1 100 instructions of a Q4_K GEMV pass on sm_90).
#pragma once
#include "q8_act.cuh"

// ---- loads ------------------------------------------------------------------
// Weights are read once per step: non-caching loads keep L1 for the activations.
#ifdef RAYO_SIMT
__device__ __forceinline__ uint4 ld_stream16(const u8* p) {
  uint4 v;
  memcpy(&v, p, 16);
  return v;
}
__device__ __forceinline__ u32 ld_stream4(const u8* p) {
  u32 v;
  memcpy(&v, p, 4);
  return v;
}
__device__ __forceinline__ u16 ld_stream2(const u8* p) {
  u16 v;
  memcpy(&v, p, 2);
  return v;
}
#else
__device__ __forceinline__ uint4 ld_stream16(const u8* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}
__device__ __forceinline__ u32 ld_stream4(const u8* p) {
  u32 v;
  asm("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ u16 ld_stream2(const u8* p) {
  u16 v;
  asm("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}
#endif

// Bytes of a minus the bytes of c, byte by byte, for bytes of a below 128 and of
// c at most 128 (no borrow crosses a byte): the signed results as int8 lanes.
__device__ __forceinline__ int sub_bytes(u32 a, u32 c) { return static_cast<int>(((a | 0x80808080u) - c) ^ 0x80808080u); }

// Bits 0..3 of bits4 to bit 0 of bytes 0..3 (the multiply places bit k at
// k + 7k' for k' = 0..3: no two terms overlap, so nothing carries).
__device__ __forceinline__ u32 spread4(u32 bits4) { return (bits4 * 0x00204081u) & 0x01010101u; }

__device__ __forceinline__ u32 word(const uint4& v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

// The activations of one unit of one token (q8_act.cuh layout): up to 64
// values as 16 ints of 4 int8 lanes, and the (d, d * sum) of up to 4 blocks of 32.
struct Act {
  int q[16];
  float2 ds[4];
};

__device__ __forceinline__ void ld_act16(const i8* p, int* q) {
  const int4 v = __ldg(reinterpret_cast<const int4*>(p));
  q[0] = v.x;
  q[1] = v.y;
  q[2] = v.z;
  q[3] = v.w;
}

template <int FMT>
struct Gpu;

// Bytes per block of plane p (0..2) of format FMT (Gpu<FMT>::kPlane0..2).
template <int FMT>
__device__ __forceinline__ constexpr int plane_bytes(int p) {
  return p == 0 ? Gpu<FMT>::kPlane0 : p == 1 ? Gpu<FMT>::kPlane1 : Gpu<FMT>::kPlane2;
}

// Whether a row of K columns of format FMT is laid out in pairs of blocks
// (weight_layout.h: Q8_0 in rows of an even number of blocks).
template <int FMT, int K>
__device__ __forceinline__ constexpr bool paired_blocks() {
  return FMT == FMT_Q8_0 && K / 32 % 2 == 0;
}

// Where a format's blocks are read from: Gpu<FMT>::read(src, b, j) takes unit
// j of block b through src.ld16 / ld4 / ld2(plane, b, byte), the bytes at
// `byte` of block b's part of that plane (which may lie before it: paired
// blocks), and src's kCols, the row's columns. GlobalPlanes reads an R x K matrix
// in its GPU layout (weight_layout.h: each plane starts at the next 256-byte
// boundary after the previous one) with streaming loads; the f16 GEMM's stage
// (gemm.cuh) reads its copy of a row's chunk in shared memory.
__device__ __forceinline__ constexpr long long round256(long long v) { return (v + 255) / 256 * 256; }
template <int FMT, long long R, int K>
struct GlobalPlanes {
  static constexpr int kCols = K;
  static constexpr long long kBlocks = R * (K / Gpu<FMT>::kBlock);
  static constexpr long long kP1 = round256(kBlocks * Gpu<FMT>::kPlane0);
  static constexpr long long kP2 = round256(kP1 + kBlocks * Gpu<FMT>::kPlane1);
  const u8* w;
  __device__ const u8* at(int p, long long b, int byte) const {
    return w + (p == 0 ? 0 : p == 1 ? kP1 : kP2) + b * plane_bytes<FMT>(p) + byte;
  }
  __device__ uint4 ld16(int p, long long b, int byte) const { return ld_stream16(at(p, b, byte)); }
  __device__ u32 ld4(int p, long long b, int byte) const { return ld_stream4(at(p, b, byte)); }
  __device__ u16 ld2(int p, long long b, int byte) const { return ld_stream2(at(p, b, byte)); }
};

// The block of a matrix of K columns holding unit u of row `row`, and the
// unit's place in that block (Gpu<FMT>::read's b and j). Q8_0's unit is a
// whole block: its j is the block's place in its pair (paired_blocks: rows
// of an even number of blocks, so u's parity is the block's), which read
// takes from u rather than from b, whose parity the compiler does not see
// through the row's offset (it computed it again for each row: a Q8_0 GEMV
// pass 155 -> 191 instructions on sm_90).
template <int FMT, int K>
__device__ __forceinline__ long long unit_block(long long row, int u) {
  return row * (K / Gpu<FMT>::kBlock) + u / (Gpu<FMT>::kBlock / Gpu<FMT>::kUnit);
}
template <int FMT>
__device__ __forceinline__ int unit_in_block(int u) {
  return FMT == FMT_Q8_0 ? u & 1 : u % (Gpu<FMT>::kBlock / Gpu<FMT>::kUnit);
}

// Unit u of row `row` of an R x K matrix of format FMT in its GPU layout.
template <int FMT, long long R, int K>
__device__ __forceinline__ typename Gpu<FMT>::Unit load_unit(const u8* w, long long row, int u) {
  return Gpu<FMT>::read(GlobalPlanes<FMT, R, K>{w}, unit_block<FMT, K>(row, u), unit_in_block<FMT>(u));
}

// GEMMs decode a matrix a 256-value chunk of a row at a time: 256 / kUnit
// units, unit_halves giving each unit's values (Gpu<FMT>::ints, and per
// segment of 16 Gpu<FMT>::affine: value = a * lane + b) and Gpu<FMT>::offset
// where each lies in the chunk (units are contiguous runs of 16 to 64 values).

// ---- 32-value formats: a unit is one block ----------------------------------

// Activations of block u: values 32u .. 32u+31.
__device__ __forceinline__ void load_act32(const i8* xq, const float2* xds, int u, Act& a) {
  ld_act16(xq + 32 * u, a.q);
  ld_act16(xq + 32 * u + 16, a.q + 4);
  a.ds[0] = __ldg(xds + u);
}

// A block's 32 nibbles as int8 lanes: the low nibbles of w (values 0..15),
// then the high ones (16..31).
__device__ __forceinline__ void nibble_ints(const uint4& w, int* q) {
RAYO_UNROLL
  for (int i = 0; i < 4; ++i) {
    q[i] = static_cast<int>(word(w, i) & 0x0F0F0F0Fu);
    q[4 + i] = static_cast<int>((word(w, i) >> 4) & 0x0F0F0F0Fu);
  }
}

// What the 32-value formats share: a unit is one block of the row, its
// values contiguous.
struct Block32Unit {
  static constexpr int kUnit = 32, kBlock = 32;
  static constexpr bool kXSums = false;
  static constexpr bool kPairedSegments = true;  // one scale for the block's 2 segments
  // Where value i of unit uc (0..7) of a 256-value chunk lies in the chunk.
  __device__ static int offset(int uc, int i) { return 32 * uc + i; }
  __device__ static void load_act(const i8* xq, const float2* xds, int u, Act& a) { load_act32(xq, xds, u, a); }
};

// What Q4_0 and IQ4_NL share: an f16 scale and 16 bytes of nibbles per block
// of 32 (the nibbles are quants in Q4_0, level indices in IQ4_NL).
struct Nibble32Unit : Block32Unit {
  struct Unit {
    uint4 qs;
    u16 d;
  };
  static constexpr int kPlane0 = 16, kPlane1 = 2, kPlane2 = 0;
  template <typename Src>
  __device__ static Unit read(const Src& s, long long b, int) {
    return Unit{s.ld16(0, b, 0), s.ld2(1, b, 0)};
  }
  struct Meta {
    float d;
  };
  __device__ static Meta meta(const Unit& w) { return Meta{h2f(w.d)}; }
};

template <>
struct Gpu<FMT_Q4_0> : Nibble32Unit {
  __device__ static void ints(const Unit& w, int* q) { nibble_ints(w.qs, q); }
  // sum (q - 8) d * x: d (dx * sum q qx - 8 * dx * sum qx)
  __device__ static float combine(const Meta& m, const int* seg, const int*, const float2* ds) {
    const int s = seg[0] + seg[1];
    return m.d * (ds[0].x * static_cast<float>(s) - 8.0f * ds[0].y);
  }
  // Segment s's values from its int8 lanes: value = a * lane + b (GEMMs,
  // unit_halves). (q - 8) d = d q - 8 d, 8 d exact.
  __device__ static void affine(const Meta& m, int, float& a, float& b) { a = m.d, b = -8.0f * m.d; }
};

template <>
struct Gpu<FMT_Q4_1> : Block32Unit {
  struct Unit {
    uint4 qs;
    u32 dm;
  };
  static constexpr int kPlane0 = 16, kPlane1 = 4, kPlane2 = 0;
  template <typename Src>
  __device__ static Unit read(const Src& s, long long b, int) {
    return Unit{s.ld16(0, b, 0), s.ld4(1, b, 0)};
  }
  struct Meta {
    float d, m;
  };
  __device__ static Meta meta(const Unit& w) { return Meta{h2f(static_cast<u16>(w.dm)), h2f(static_cast<u16>(w.dm >> 16))}; }
  __device__ static void ints(const Unit& w, int* q) { nibble_ints(w.qs, q); }
  // sum (q d + m) x
  __device__ static float combine(const Meta& m, const int* seg, const int*, const float2* ds) {
    const int s = seg[0] + seg[1];
    return m.d * ds[0].x * static_cast<float>(s) + m.m * ds[0].y;
  }
  __device__ static void affine(const Meta& m, int, float& a, float& b) { a = m.d, b = m.m; }
};

// Q5's 5-bit quants as int8 lanes: the fifth bits of values 4i..4i+3 (low
// nibbles) and 16+4i.. (high) from qh.
__device__ __forceinline__ void q5_ints(const uint4& qs, u32 qh, int* q) {
RAYO_UNROLL
  for (int i = 0; i < 4; ++i) {
    const u32 v = word(qs, i);
    q[i] = static_cast<int>((v & 0x0F0F0F0Fu) | (spread4((qh >> (4 * i)) & 0xF) << 4));
    q[4 + i] = static_cast<int>(((v >> 4) & 0x0F0F0F0Fu) | (spread4((qh >> (16 + 4 * i)) & 0xF) << 4));
  }
}

template <>
struct Gpu<FMT_Q5_0> : Block32Unit {
  struct Unit {
    uint4 qs;
    u32 qh;
    u16 d;
  };
  static constexpr int kPlane0 = 16, kPlane1 = 4, kPlane2 = 2;
  template <typename Src>
  __device__ static Unit read(const Src& s, long long b, int) {
    return Unit{s.ld16(0, b, 0), s.ld4(1, b, 0), s.ld2(2, b, 0)};
  }
  struct Meta {
    float d;
  };
  __device__ static Meta meta(const Unit& w) { return Meta{h2f(w.d)}; }
  __device__ static void ints(const Unit& w, int* q) { q5_ints(w.qs, w.qh, q); }
  // sum (q - 16) d x
  __device__ static float combine(const Meta& m, const int* seg, const int*, const float2* ds) {
    const int s = seg[0] + seg[1];
    return m.d * (ds[0].x * static_cast<float>(s) - 16.0f * ds[0].y);
  }
  __device__ static void affine(const Meta& m, int, float& a, float& b) { a = m.d, b = -16.0f * m.d; }
};

template <>
struct Gpu<FMT_Q5_1> : Block32Unit {
  struct Unit {
    uint4 qs;
    u32 qh, dm;
  };
  static constexpr int kPlane0 = 16, kPlane1 = 4, kPlane2 = 4;
  template <typename Src>
  __device__ static Unit read(const Src& s, long long b, int) {
    return Unit{s.ld16(0, b, 0), s.ld4(1, b, 0), s.ld4(2, b, 0)};
  }
  struct Meta {
    float d, m;
  };
  __device__ static Meta meta(const Unit& w) { return Meta{h2f(static_cast<u16>(w.dm)), h2f(static_cast<u16>(w.dm >> 16))}; }
  __device__ static void ints(const Unit& w, int* q) { q5_ints(w.qs, w.qh, q); }
  __device__ static float combine(const Meta& m, const int* seg, const int*, const float2* ds) {
    const int s = seg[0] + seg[1];
    return m.d * ds[0].x * static_cast<float>(s) + m.m * ds[0].y;
  }
  __device__ static void affine(const Meta& m, int, float& a, float& b) { a = m.d, b = m.m; }
};

template <>
struct Gpu<FMT_Q8_0> : Block32Unit {
  struct Unit {
    uint4 q0, q1;
    u16 d;
  };
  static constexpr int kPlane0 = 32, kPlane1 = 2, kPlane2 = 0;
  // Paired blocks (weight_layout.h): block b's first half is 16 (b % 2) bytes
  // into its pair, its second half 32 bytes further; j = b % 2 (unit_in_block).
  template <typename Src>
  __device__ static Unit read(const Src& s, long long b, int j) {
    constexpr bool kPaired = paired_blocks<FMT_Q8_0, Src::kCols>();
    const long long pair = kPaired ? b - j : b;  // read from the pair's first block, at non-negative offsets
    const int first = kPaired ? 16 * j : 0;
    return Unit{s.ld16(0, pair, first), s.ld16(0, pair, first + (kPaired ? 32 : 16)), s.ld2(1, b, 0)};
  }
  struct Meta {
    float d;
  };
  __device__ static Meta meta(const Unit& w) { return Meta{h2f(w.d)}; }
  __device__ static void ints(const Unit& w, int* q) {
RAYO_UNROLL
    for (int i = 0; i < 4; ++i) {
      q[i] = static_cast<int>(word(w.q0, i));
      q[4 + i] = static_cast<int>(word(w.q1, i));
    }
  }
  __device__ static float combine(const Meta& m, const int* seg, const int*, const float2* ds) {
    const int s = seg[0] + seg[1];
    return m.d * ds[0].x * static_cast<float>(s);
  }
  __device__ static void affine(const Meta& m, int, float& a, float& b) { a = m.d, b = 0.0f; }
};

// IQ4_NL: Q4_0's nibbles, each the index of one of 16 levels (common.cuh:
// iq4_levels), which are the int8 lanes.
template <>
struct Gpu<FMT_IQ4_NL> : Nibble32Unit {
  __device__ static void ints(const Unit& w, int* q) {
RAYO_UNROLL
    for (int i = 0; i < 4; ++i) iq4_levels(word(w.qs, i), &q[i], &q[4 + i]);
  }
  // sum d level x: d dx sum level qx
  __device__ static float combine(const Meta& m, const int* seg, const int*, const float2* ds) {
    const int s = seg[0] + seg[1];
    return m.d * ds[0].x * static_cast<float>(s);
  }
  __device__ static void affine(const Meta& m, int, float& a, float& b) { a = m.d, b = 0.0f; }
};

// ---- 256-value formats: four units per block --------------------------------

// The 6-bit scales and mins of sub-blocks 2j and 2j+1 of a Q4_K/Q5_K block (a
// unit's two), from the 12 scale bytes s[0..11] in words 1..3 of the block's
// first 16 bytes: sc is scale(2j) | scale(2j+1) << 8, m the mins alike.
// Sub-block k < 4: scale s[k] & 63, min s[k+4] & 63; k >= 4: scale s[k+4] & 15
// with s[k-4]'s top 2 bits above, min s[k+4] >> 4 with s[k]'s top 2 bits. The
// pair for unit j is in the 16-bit halves j % 2 of words 1..3, so both cases are
// a few whole-pair operations and a select: no branch on j, which differs from
// lane to lane (a branch made the GEMV's lanes run both cases, and the byte
// extraction was 600 of the 1 100 instructions of a Q4_K pass on sm_90).
__device__ __forceinline__ void k4_scale_min_pair(const uint4& head, int j, u32& sc, u32& m) {
  const int shift = 16 * (j & 1);
  const u32 a = head.y >> shift, b = head.z >> shift, c = head.w >> shift;
  const u32 sc_lo = a & 0x3F3Fu, m_lo = b & 0x3F3Fu;
  const u32 sc_hi = (c & 0x0F0Fu) | ((a >> 2) & 0x3030u);
  const u32 m_hi = ((c >> 4) & 0x0F0Fu) | ((b >> 2) & 0x3030u);
  sc = j < 2 ? sc_lo : sc_hi;
  m = j < 2 ? m_lo : m_hi;
}

// Activations of values 64j .. 64j+63 of block b (Q4_K, Q5_K): blocks 8b+2j, +1.
__device__ __forceinline__ void load_act_k64(const i8* xq, const float2* xds, int b, int j, Act& a) {
  const i8* p = xq + 256 * b + 64 * j;
RAYO_UNROLL
  for (int i = 0; i < 4; ++i) ld_act16(p + 16 * i, a.q + 4 * i);
  const float4 ds = __ldg(reinterpret_cast<const float4*>(xds + 8 * b + 2 * j));
  a.ds[0] = make_float2(ds.x, ds.y);
  a.ds[1] = make_float2(ds.z, ds.w);
}

// What Q4_K and Q5_K share: a unit is a quarter of a block, 64 contiguous
// values (two sub-blocks of 32).
struct K64Unit {
  static constexpr int kUnit = 64, kBlock = 256;
  static constexpr bool kXSums = false;
  static constexpr bool kPairedSegments = true;  // a sub-block of 32 per pair
  // The block's d and dmin, and the 6-bit scales and mins of the unit's two sub-blocks.
  struct Meta {
    float d, dmin;
    int sc0, m0, sc1, m1;
  };
  __device__ static Meta meta_of(const uint4& head, int j) {
    Meta m;
    m.d = h2f(static_cast<u16>(head.x));
    m.dmin = h2f(static_cast<u16>(head.x >> 16));
    u32 sc, mn;
    k4_scale_min_pair(head, j, sc, mn);
    m.sc0 = static_cast<int>(sc & 0xFF), m.sc1 = static_cast<int>(sc >> 8);
    m.m0 = static_cast<int>(mn & 0xFF), m.m1 = static_cast<int>(mn >> 8);
    return m;
  }
  // d * (sc0 dx0 s0 + sc1 dx1 s1) - dmin * (m0 sx0 + m1 sx1), s0 the sum of
  // segments 0 and 1 (the first sub-block of 32), s1 of 2 and 3.
  __device__ static float combine(const Meta& m, const int* seg, const int*, const float2* ds) {
    const int s0 = seg[0] + seg[1], s1 = seg[2] + seg[3];
    return m.d * (ds[0].x * static_cast<float>(m.sc0 * s0) + ds[1].x * static_cast<float>(m.sc1 * s1)) -
           m.dmin * (static_cast<float>(m.m0) * ds[0].y + static_cast<float>(m.m1) * ds[1].y);
  }
  __device__ static int offset(int uc, int i) { return 64 * uc + i; }
  __device__ static void load_act(const i8* xq, const float2* xds, int u, Act& a) {
    load_act_k64(xq, xds, u / 4, u % 4, a);
  }
  // Segments 0, 1 are the first sub-block (value = d sc0 q - dmin m0), 2, 3 the second.
  __device__ static void affine(const Meta& m, int s, float& a, float& b) {
    a = m.d * static_cast<float>(s < 2 ? m.sc0 : m.sc1);
    b = -(m.dmin * static_cast<float>(s < 2 ? m.m0 : m.m1));
  }
};

template <>
struct Gpu<FMT_Q4_K> : K64Unit {
  struct Unit {
    uint4 head, q0, q1;
    int j;
  };
  static constexpr int kPlane0 = 128, kPlane1 = 16, kPlane2 = 0;
  // The unit's quants are pieces j and 4 + j of plane 0 (weight_layout.h).
  template <typename Src>
  __device__ static Unit read(const Src& s, long long b, int j) {
    return Unit{s.ld16(1, b, 0), s.ld16(0, b, 16 * j), s.ld16(0, b, 64 + 16 * j), j};
  }
  __device__ static Meta meta(const Unit& w) { return meta_of(w.head, w.j); }
  __device__ static void ints(const Unit& w, int* q) {
RAYO_UNROLL
    for (int i = 0; i < 8; ++i) {
      const u32 v = word(i < 4 ? w.q0 : w.q1, i % 4);
      q[i] = static_cast<int>(v & 0x0F0F0F0Fu);
      q[8 + i] = static_cast<int>((v >> 4) & 0x0F0F0F0Fu);
    }
  }
};

template <>
struct Gpu<FMT_Q5_K> : K64Unit {
  struct Unit {
    uint4 head, h0, h1, q0, q1;
    int j;
  };
  static constexpr int kPlane0 = 128, kPlane1 = 16, kPlane2 = 32;
  template <typename Src>
  __device__ static Unit read(const Src& s, long long b, int j) {
    return Unit{s.ld16(1, b, 0), s.ld16(2, b, 0), s.ld16(2, b, 16), s.ld16(0, b, 16 * j), s.ld16(0, b, 64 + 16 * j),
                j};
  }
  __device__ static Meta meta(const Unit& w) { return meta_of(w.head, w.j); }
  __device__ static void ints(const Unit& w, int* q) {
RAYO_UNROLL
    for (int i = 0; i < 8; ++i) {
      const u32 v = word(i < 4 ? w.q0 : w.q1, i % 4);
      const u32 h = word(i < 4 ? w.h0 : w.h1, i % 4);
      q[i] = static_cast<int>((v & 0x0F0F0F0Fu) | (((h >> (2 * w.j)) & 0x01010101u) << 4));
      q[8 + i] = static_cast<int>(((v >> 4) & 0x0F0F0F0Fu) | (((h >> (2 * w.j + 1)) & 0x01010101u) << 4));
    }
  }
};

// IQ4_XS: a unit is a quarter of a block, as Q4_K's (the same activations),
// sub-blocks 2j and 2j+1, each arranged as an IQ4_NL block (qs[16s .. 16s+15]:
// low nibbles values 0..15, high nibbles 16..31) with the scale d * (ls - 32),
// ls its 6 bits: low 4 in nibble s % 2 of scales_l[s / 2], high 2 in bits 2s of
// scales_h.
template <>
struct Gpu<FMT_IQ4_XS> {
  static constexpr int kUnit = 64, kBlock = 256;
  static constexpr bool kXSums = false;
  static constexpr bool kPairedSegments = true;
  struct Unit {
    uint4 q0, q1;
    u32 dh, sl;  // d | scales_h << 16; scales_l
    int j;
  };
  static constexpr int kPlane0 = 128, kPlane1 = 8, kPlane2 = 0;
  template <typename Src>
  __device__ static Unit read(const Src& s, long long b, int j) {
    return Unit{s.ld16(0, b, 16 * j), s.ld16(0, b, 64 + 16 * j), s.ld4(1, b, 0), s.ld4(1, b, 4), j};
  }
  // d and the signed scales (ls - 32) of the unit's sub-blocks.
  struct Meta {
    float d;
    int sc0, sc1;
  };
  __device__ static int scale(const Unit& w, int s) {
    return static_cast<int>(((w.sl >> (4 * s)) & 0xF) | (((w.dh >> (16 + 2 * s)) & 3) << 4)) - 32;
  }
  __device__ static Meta meta(const Unit& w) {
    return Meta{h2f(static_cast<u16>(w.dh)), scale(w, 2 * w.j), scale(w, 2 * w.j + 1)};
  }
  __device__ static void ints(const Unit& w, int* q) {
RAYO_UNROLL
    for (int i = 0; i < 4; ++i) {
      iq4_levels(word(w.q0, i), &q[i], &q[4 + i]);
      iq4_levels(word(w.q1, i), &q[8 + i], &q[12 + i]);
    }
  }
  // d * (sc0 dx0 s0 + sc1 dx1 s1), s0 the sum of segments 0 and 1 (sub-block
  // 2j), s1 of 2 and 3.
  __device__ static float combine(const Meta& m, const int* seg, const int*, const float2* ds) {
    const int s0 = seg[0] + seg[1], s1 = seg[2] + seg[3];
    return m.d * (ds[0].x * static_cast<float>(m.sc0 * s0) + ds[1].x * static_cast<float>(m.sc1 * s1));
  }
  __device__ static int offset(int uc, int i) { return 64 * uc + i; }
  __device__ static void load_act(const i8* xq, const float2* xds, int u, Act& a) {
    load_act_k64(xq, xds, u / 4, u % 4, a);
  }
  __device__ static void affine(const Meta& m, int s, float& a, float& b) {
    a = m.d * static_cast<float>(s < 2 ? m.sc0 : m.sc1), b = 0.0f;
  }
};

template <>
struct Gpu<FMT_Q6_K> {
  static constexpr int kUnit = 64, kBlock = 256;
  // The weights are q - 32 for 6-bit q: ints gives q, and combine takes 32
  // times the activations' sums off (a DP4A per 4 activations, which the
  // rows of a warp share, instead of a byte-wise subtraction per weight word).
  static constexpr bool kXSums = true;
  static constexpr bool kPairedSegments = false;  // a scale per segment of 16
  struct Unit {
    uint4 l0, l1, h0, h1, sc;
    u16 d;
    int h, a;
  };
  static constexpr int kPlane0 = 192, kPlane1 = 16, kPlane2 = 2;
  // Plane 0 (weight_layout.h): ql's first halves, its second halves, then qh
  // as bytes 0..15 of the halves h = 0 and 1, and bytes 16..31 of both.
  template <typename Src>
  __device__ static Unit read(const Src& s, long long b, int j) {
    const int h = j / 2, a = j % 2;
    return Unit{s.ld16(0, b, 16 * j),
                s.ld16(0, b, 64 + 16 * j),
                s.ld16(0, b, 128 + 16 * h),
                s.ld16(0, b, 160 + 16 * h),
                s.ld16(1, b, 0),
                s.ld2(2, b, 0),
                h,
                a};
  }
  // Values 128h+32a+[0,32) and 128h+64+32a+[0,32): blocks 4h+a and 4h+2+a of the 8.
  __device__ static void load_act(const i8* xq, const float2* xds, int u, Act& a) {
    const int b = u / 4, h = (u % 4) / 2, s = u % 2;
    const i8* p = xq + 256 * b + 128 * h + 32 * s;
    ld_act16(p, a.q);
    ld_act16(p + 16, a.q + 4);
    ld_act16(p + 64, a.q + 8);
    ld_act16(p + 80, a.q + 12);
    a.ds[0] = __ldg(xds + 8 * b + 4 * h + s);
    a.ds[1] = __ldg(xds + 8 * b + 4 * h + 2 + s);
  }
  // d, and the scales of the unit's segments: 8h + 2a + {0, 1} (low
  // nibbles) and 8h + 4 + 2a + {0, 1} (high).
  struct Meta {
    float d;
    int sc[4];
  };
  // Scales 8h + 2a + {0, 1} are bytes 2a, 2a + 1 of word 2h of sc, 8h + 4 + 2a +
  // {0, 1} the same bytes of word 2h + 1: two selects and shifts, no branch on
  // the lane's (h, a).
  __device__ static Meta meta(const Unit& w) {
    const int shift = 16 * w.a;
    const u32 lo = (w.h ? w.sc.z : w.sc.x) >> shift, hi = (w.h ? w.sc.w : w.sc.y) >> shift;
    auto s8 = [](u32 v) { return static_cast<int>(static_cast<i8>(v & 0xFF)); };
    return Meta{h2f(w.d), {s8(lo), s8(lo >> 8), s8(hi), s8(hi >> 8)}};
  }
  // q: low nibbles l < 16, l >= 16, then high nibbles l < 16, l >= 16, each
  // with its 2 high bits from qh (bits 2a and 4 + 2a of each byte).
  __device__ static void ints(const Unit& w, int* q) {
    const int lo_shift = 2 * w.a, hi_shift = 4 + 2 * w.a;
RAYO_UNROLL
    for (int i = 0; i < 8; ++i) {
      const u32 v = word(i < 4 ? w.l0 : w.l1, i % 4);
      const u32 hb = word(i < 4 ? w.h0 : w.h1, i % 4);
      q[i] = static_cast<int>((v & 0x0F0F0F0Fu) | (((hb >> lo_shift) & 0x03030303u) << 4));
      q[8 + i] = static_cast<int>(((v >> 4) & 0x0F0F0F0Fu) | (((hb >> hi_shift) & 0x03030303u) << 4));
    }
  }
  // d * sum over the 4 segments (sub-blocks of 16): scale * dx * sum (q - 32) qx,
  // sum (q - 32) qx = seg - 32 xseg exactly.
  __device__ static float combine(const Meta& m, const int* seg, const int* xseg, const float2* ds) {
    const int lo = m.sc[0] * (seg[0] - 32 * xseg[0]) + m.sc[1] * (seg[1] - 32 * xseg[1]);
    const int hi = m.sc[2] * (seg[2] - 32 * xseg[2]) + m.sc[3] * (seg[3] - 32 * xseg[3]);
    return m.d * (ds[0].x * static_cast<float>(lo) + ds[1].x * static_cast<float>(hi));
  }
  // Values 0..31: 128h + 32a + i; 32..63: 128h + 64 + 32a + (i - 32).
  __device__ static int offset(int uc, int i) { return 128 * (uc / 2) + 32 * (uc % 2) + (i < 32 ? i : i + 32); }
  // Segment s's lanes are q: the value d sc (q - 32) = a q - 32 a, 32 a exact.
  __device__ static void affine(const Meta& m, int s, float& a, float& b) {
    a = m.d * static_cast<float>(m.sc[s]), b = -32.0f * a;
  }
};

// Q2_K/Q3_K activations of unit (h, i) of block b: values 128h+32j+16i+[0,16)
// for j = 0..3 (ints 4j..4j+3), and blocks 8b+4h+j.
__device__ __forceinline__ void load_act_k16(const i8* xq, const float2* xds, int u, Act& a) {
  const int b = u / 4, h = (u % 4) / 2, i = u % 2;
  const i8* p = xq + 256 * b + 128 * h + 16 * i;
RAYO_UNROLL
  for (int j = 0; j < 4; ++j) ld_act16(p + 32 * j, a.q + 4 * j);
  const float4* d = reinterpret_cast<const float4*>(xds + 8 * b + 4 * h);
  const float4 d0 = __ldg(d), d1 = __ldg(d + 1);
  a.ds[0] = make_float2(d0.x, d0.y);
  a.ds[1] = make_float2(d0.z, d0.w);
  a.ds[2] = make_float2(d1.x, d1.y);
  a.ds[3] = make_float2(d1.z, d1.w);
}

// What Q2_K and Q3_K share: a unit is (h, i) of a block, four runs of 16
// values, 32 apart.
struct K16Unit {
  static constexpr int kUnit = 64, kBlock = 256;
  static constexpr bool kPairedSegments = false;  // a scale per segment of 16
  __device__ static int offset(int uc, int v) { return 128 * (uc / 2) + 32 * (v / 16) + 16 * (uc % 2) + v % 16; }
  __device__ static void load_act(const i8* xq, const float2* xds, int u, Act& a) { load_act_k16(xq, xds, u, a); }
};

template <>
struct Gpu<FMT_Q2_K> : K16Unit {
  static constexpr bool kXSums = true;
  struct Unit {
    uint4 sc, qs;
    u32 dm;
    int h, i;
  };
  static constexpr int kPlane0 = 64, kPlane1 = 16, kPlane2 = 4;
  template <typename Src>
  __device__ static Unit read(const Src& s, long long b, int j) {
    const int h = j / 2, i = j % 2;
    return Unit{s.ld16(1, b, 0), s.ld16(0, b, 32 * h + 16 * i), s.ld4(2, b, 0), h, i};
  }
  // d, dmin, and the scale byte (scale | min << 4) of segment j in byte j of sc:
  // the block's byte 8h + i + 2j, which is byte i (j = 0, 2) or i + 2 (j = 1,
  // 3) of word 2h (j < 2) or 2h + 1 of the 16 scale bytes, gathered by one byte
  // permutation: no branch on the lane's (h, i).
  struct Meta {
    float d, dmin;
    u32 sc;
  };
  __device__ static Meta meta(const Unit& w) {
    const int shift = 8 * w.i;
    const u32 a = (w.h ? w.sc.z : w.sc.x) >> shift, b = (w.h ? w.sc.w : w.sc.y) >> shift;
    return Meta{h2f(static_cast<u16>(w.dm)), h2f(static_cast<u16>(w.dm >> 16)), __byte_perm(a, b, 0x6420)};
  }
  // Segment j: the 2-bit quants in bits 2j.
  __device__ static void ints(const Unit& w, int* q) {
RAYO_UNROLL
    for (int j = 0; j < 4; ++j)
RAYO_UNROLL
      for (int k = 0; k < 4; ++k) q[4 * j + k] = static_cast<int>((word(w.qs, k) >> (2 * j)) & 0x03030303u);
  }
  // Per segment j of 16: dx * (d * scale * sum q qx - dmin * min * sum qx).
  __device__ static float combine(const Meta& m, const int* seg, const int* xseg, const float2* ds) {
    float r = 0.0f;
RAYO_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int sc = static_cast<int>((m.sc >> (8 * j)) & 0xFF);
      r += ds[j].x * (m.d * static_cast<float>((sc & 0xF) * seg[j]) - m.dmin * static_cast<float>((sc >> 4) * xseg[j]));
    }
    return r;
  }
  // Segment j (values 128h + 32j + 16i + [0, 16)): d scale q - dmin min.
  __device__ static void affine(const Meta& m, int j, float& a, float& b) {
    const int sc = static_cast<int>((m.sc >> (8 * j)) & 0xFF);
    a = m.d * static_cast<float>(sc & 0xF), b = -(m.dmin * static_cast<float>(sc >> 4));
  }
};

template <>
struct Gpu<FMT_Q3_K> : K16Unit {
  static constexpr bool kXSums = false;
  struct Unit {
    uint4 hm, qs;
    u32 sc[3];
    u16 d;
    int h, i;
  };
  static constexpr int kPlane0 = 96, kPlane1 = 12, kPlane2 = 2;
  template <typename Src>
  __device__ static Unit read(const Src& s, long long b, int j) {
    const int h = j / 2, i = j % 2;
    return Unit{s.ld16(0, b, 16 * i),
                s.ld16(0, b, 32 + 32 * h + 16 * i),
                {s.ld4(1, b, 0), s.ld4(1, b, 4), s.ld4(1, b, 8)},
                s.ld2(2, b, 0),
                h,
                i};
  }
  // d, and the scale (6 bits, less 32) of segment j: the block's scale
  // si = 8h + i + 2j. Its low 4 bits are the low (h = 0) or high (h = 1)
  // nibble of byte i + 2j of the 12 scale bytes; its high 2 bits are bits
  // 4h + 2 (j / 2) of byte 8 + i + 2 (j % 2). Byte permutations gather the
  // four at once: no branch on the lane's (h, i).
  struct Meta {
    float d;
    int sc[4];
  };
  __device__ static Meta meta(const Unit& w) {
    const int shift = 8 * w.i;
    const u32 low = (__byte_perm(w.sc[0] >> shift, w.sc[1] >> shift, 0x6420) >> (4 * w.h)) & 0x0F0F0F0Fu;
    const u32 hb = __byte_perm(w.sc[2] >> shift, 0, 0x2020) >> (4 * w.h);
    const u32 high = (hb & 0x00000303u) | ((hb >> 2) & 0x03030000u);
    const u32 six = low | (high << 4);
    Meta m;
    m.d = h2f(w.d);
RAYO_UNROLL
    for (int j = 0; j < 4; ++j) m.sc[j] = static_cast<int>((six >> (8 * j)) & 0xFF) - 32;
    return m;
  }
  // Segment j: q - 4 * !hbit, the 2-bit quants in bits 2j and the high bits in bit 4h + j.
  __device__ static void ints(const Unit& w, int* q) {
RAYO_UNROLL
    for (int j = 0; j < 4; ++j)
RAYO_UNROLL
      for (int k = 0; k < 4; ++k) {
        const u32 lo = (word(w.qs, k) >> (2 * j)) & 0x03030303u;
        const u32 hbit = (word(w.hm, k) >> (4 * w.h + j)) & 0x01010101u;
        q[4 * j + k] = sub_bytes(lo | (hbit << 2), 0x04040404u);
      }
  }
  // d * sum over segments j of 16: (scale - 32) * dx * sum (q - 4 * !hbit) qx.
  __device__ static float combine(const Meta& m, const int* seg, const int*, const float2* ds) {
    float r = 0.0f;
RAYO_UNROLL
    for (int j = 0; j < 4; ++j) r += ds[j].x * static_cast<float>(m.sc[j] * seg[j]);
    return m.d * r;
  }
  __device__ static void affine(const Meta& m, int j, float& a, float& b) { a = m.d * static_cast<float>(m.sc[j]), b = 0.0f; }
};

// ---- the dot product of a unit ---------------------------------------------

// A unit's weights decoded for its dot products: int8 lanes and scales.
template <int FMT>
struct DecodedUnit {
  int q[Gpu<FMT>::kUnit / 4];
  typename Gpu<FMT>::Meta m;
};
template <int FMT>
__device__ __forceinline__ DecodedUnit<FMT> decode_unit(const typename Gpu<FMT>::Unit& w) {
  DecodedUnit<FMT> d;
  Gpu<FMT>::ints(w, d.q);
  d.m = Gpu<FMT>::meta(w);
  return d;
}

// W[unit] . x[unit] for a decoded unit: the integer sums per segment of 16
// values by DP4A, then the format's float combination (the int8 GEMMs take
// the same two steps).
template <int FMT>
__device__ __forceinline__ float decoded_dot(const DecodedUnit<FMT>& w, const Act& a) {
  using F = Gpu<FMT>;
  constexpr int kInts = F::kUnit / 4, kSegs = kInts / 4;
  int seg[kSegs], xseg[kSegs];
RAYO_UNROLL
  for (int k = 0; k < kSegs; ++k) seg[k] = xseg[k] = 0;
RAYO_UNROLL
  for (int i = 0; i < kInts; ++i) {
    seg[i / 4] = __dp4a(w.q[i], a.q[i], seg[i / 4]);
    if (F::kXSums) xseg[i / 4] = __dp4a(0x01010101, a.q[i], xseg[i / 4]);
  }
  return F::combine(w.m, seg, xseg, a.ds);
}

// W[unit] . x[unit] straight from the loaded unit.
template <int FMT>
__device__ __forceinline__ float unit_dot(const typename Gpu<FMT>::Unit& w, const Act& a) {
  return decoded_dot<FMT>(decode_unit<FMT>(w), a);
}
