// gemm.cuh's int8 tiles: quantized weights times the q8 twin on int8 tensor
// cores, both kept as int8 lanes with float scales (no f16 rounding, so no
// size of residual overflows). Two namespaces over one implementation
// (int8_tile, kGemvOrder):
//   - gemm_exact (GEMM_EXACT 1, batch-invariant graphs): every output summed
//     in the GEMVs' order, so that it is bit for bit the GEMV's (gemm.cuh
//     says how);
//   - gemm_int8 (GEMM_EXACT 2, prompts): the units in their order along the
//     row, each unit's terms added straight to its output: no tree, the
//     unit's float work per output its TileScales' (gemm_int8_scales.cuh).
// Both stage the same way (weights' int8 lanes and Meta decoded once per
// block, tokens' lanes and (d, s) pairs from L2) and load their fragments by
// ldmatrix; gemm_int8 keeps each unit's TileScales in place of its Meta.
// Included by gemm.cuh alone.
#pragma once
#include "gemm_int8_scales.cuh"

namespace gemm_int8_tiles {

// Q6_K's int8 lanes (Gpu<FMT>::ints) are q, its weights q - 32: the GEMV
// takes 32 times the activations' sums off in its combine rather than
// subtract 32 from each weight it loads once. The tiles decode a weight once
// for many tokens, so they subtract it there (the same integer sums), and
// stage no activation sums for it.
template <int FMT>
constexpr bool kLanesLess32 = FMT == FMT_Q6_K;
template <int FMT>
constexpr bool kTileXSums = Gpu<FMT>::kXSums && !kLanesLess32<FMT>;

// What a stage's Meta slot holds of a unit: its Meta (the exact tile, for
// Gpu<FMT>::combine) or its TileScales.
template <int FMT, bool kGemvOrder>
struct SlotMeta {
  using Type = typename TileScales<FMT>::Scales;
};
template <int FMT>
struct SlotMeta<FMT, true> {
  using Type = typename Gpu<FMT>::Meta;
};

// A shared row holds one stage's int8 lanes: GEMM_K values as 64 ints, 4 more
// of padding so that the fragment loads of 8 rows (68 ints apart) hit 8
// distinct groups of 4 banks.
#define GEMM_ROW_INTS (GEMM_K / 4 + 4)
#define GEMM_META_BYTES 128  // a row's Meta slots per stage: 32 bytes x 4 units, or 16 x 8
#define GEMM_DS_SLOTS 16     // a token's (d, s) pairs per stage: 4 x 4 units, or 2 x 8
#define GEMM_RAW_BYTES 384   // a row's units per stage as copied: 96 bytes x 4 units, or 48 x 8

// The shared memory of a block (dynamic, like the f16 tile's: 88 KB of
// kernel_specs.h's kGemmSharedBytes): the tiles of a stage, weights' and
// activations' int8 lanes, each weight unit's SlotMeta, each token unit's
// (d, s) pairs and, for kTileXSums formats, its segments' sums of activations; and two
// stages of the weight units' bytes as the asynchronous copies bring them
// (stage kc % 2; UnitPieces). After the K loop w holds the sums,
// out[tokens][GEMM_ROWS] floats, and x the tokens' 1/rms (norm).
struct alignas(16) GemmShared {
  int w[GEMM_ROWS][GEMM_ROW_INTS];
  int x[GEMM_TOKENS][GEMM_ROW_INTS];
  alignas(16) u8 meta[GEMM_ROWS][GEMM_META_BYTES];
  float2 ds[GEMM_TOKENS][GEMM_DS_SLOTS];
  int xseg[GEMM_TOKENS][GEMM_DS_SLOTS];
  alignas(16) u8 raw[2][GEMM_ROWS][GEMM_RAW_BYTES];
  __device__ float (*out())[GEMM_ROWS] { return reinterpret_cast<float (*)[GEMM_ROWS]>(&w[0][0]); }
  __device__ float* inv() { return reinterpret_cast<float*>(&x[0][0]); }
};
static_assert(sizeof(float) * 2 * GEMM_TOKENS * GEMM_ROWS <= sizeof(int) * GEMM_ROWS * GEMM_ROW_INTS, "out() fits in w");
static_assert(2 * GEMM_TOKENS <= GEMM_TOKENS * GEMM_ROW_INTS, "inv() fits in x");
static_assert(sizeof(GemmShared) <= 98304, "kernel_specs.h's kGemmSharedBytes");

// A unit's bytes in a stage slot, piece by piece in the order Gpu<FMT>::read
// takes them (its braced initialisers run left to right): with kCopy each
// ld16 / ld4 / ld2 issues a cp.async of its piece into the slot (16-byte
// pieces at 16-byte offsets; a 2-byte field as the aligned 4-byte word
// around it) and returns nothing useful; without, each hands back the piece
// from the slot, once the copies have landed. So read() runs twice per unit,
// once to copy and once to decode, and no format restates its byte layout.
template <int FMT, long long M, int K, bool kCopy>
struct UnitPieces {
  static constexpr int kCols = K;
  GlobalPlanes<FMT, M, K> g;
  u8* slot;
  mutable int off = 0;
  __device__ int take(int bytes, int align) const {
    const int at = (off + align - 1) / align * align;
    off = at + bytes;
    return at;
  }
  __device__ uint4 ld16(int p, long long b, int byte) const {
    const int at = take(16, 16);
    if (kCopy) {
      cp_async<16>(slot + at, g.at(p, b, byte));
      return make_uint4(0, 0, 0, 0);
    }
    return *reinterpret_cast<const uint4*>(slot + at);
  }
  __device__ u32 ld4(int p, long long b, int byte) const {
    const int at = take(4, 4);
    if (kCopy) {
      cp_async<4>(slot + at, g.at(p, b, byte));
      return 0;
    }
    return *reinterpret_cast<const u32*>(slot + at);
  }
  // Planes start at 256-byte boundaries: the field's place in its word is
  // its offset in the plane, mod 4.
  __device__ u16 ld2(int p, long long b, int byte) const {
    const int at = take(4, 4);
    const long long in_plane = b * plane_bytes<FMT>(p) + byte;
    if (kCopy) {
      cp_async<4>(slot + at, g.at(p, b, byte) - (in_plane & 3));
      return 0;
    }
    return static_cast<u16>(*reinterpret_cast<const u32*>(slot + at) >> (8 * (in_plane & 3)));
  }
};

// The order in which the tile walks the units of a row of K values of format
// FMT. With kGemvOrder, place i is lane p = bitrev5(i / kPerLane)'s unit
// i % kPerLane, that is unit 32 (i % kPerLane) + p, or none when past the row
// (lanes of a row of fewer than 32 kPerLane units hold fewer). Without, place
// i is unit i.
template <int FMT, int K, bool kGemvOrder>
struct UnitOrder {
  static constexpr int kUnits = K / Gpu<FMT>::kUnit;
  static constexpr int kPerLane = kGemvOrder ? (kUnits + 31) / 32 : 1;
  static constexpr int kPlaces = kGemvOrder ? 32 * kPerLane : kUnits;
  static constexpr int kPerStage = gemm_units_per_chunk<FMT>();
  static constexpr int kStages = (kPlaces + kPerStage - 1) / kPerStage;
  // A unit slot of a stage's shared rows: its int8 lanes (kInts ints, in
  // kSegs segments of 16 values), its Meta, its tokens' (d, s) pairs and
  // segment sums (kDs each), its raw bytes.
  static constexpr int kInts = Gpu<FMT>::kUnit / 4, kSegs = kInts / 4;
  static constexpr int kMetaBytes = GEMM_META_BYTES / kPerStage;
  static constexpr int kDs = GEMM_DS_SLOTS / kPerStage;
  static constexpr int kRawBytes = GEMM_RAW_BYTES / kPerStage;
  static_assert(K % Gpu<FMT>::kUnit == 0, "quantized rows hold whole units");
  __device__ static int lane(int place) {
    const int s = place / kPerLane;
    return ((s & 1) << 4) | ((s & 2) << 2) | (s & 4) | ((s & 8) >> 2) | ((s & 16) >> 4);
  }
  // The unit at a place, or -1.
  __device__ static int unit(int place) {
    const int u = kGemvOrder ? 32 * (place % kPerLane) + lane(place) : place;
    return place < kPlaces && u < kUnits ? u : -1;
  }
  __device__ static bool ends_lane(int place) { return kGemvOrder && place % kPerLane == kPerLane - 1; }
};

template <typename Meta>
__device__ __forceinline__ void store_meta(const Meta& m, u8* slot) {
  memcpy(slot, &m, sizeof(Meta));
}
template <typename Meta>
__device__ __forceinline__ Meta load_meta(const u8* slot) {
  Meta m;
  memcpy(&m, slot, sizeof(Meta));
  return m;
}

// Issues the copies of unit slot uc of stage kc of a row of an M x K matrix
// of format FMT into its raw slot of shared row `srow` (stage kc % 2).
template <int FMT, long long M, int K, bool kGemvOrder>
__device__ __forceinline__ void gemm_stage_unit(const u8* w, long long row, int kc, int uc, GemmShared& sh, int srow) {
  using O = UnitOrder<FMT, K, kGemvOrder>;
  const int u = O::unit(kc * O::kPerStage + uc);
  if (u >= 0) {
    const UnitPieces<FMT, M, K, true> copy{{w}, sh.raw[kc % 2][srow] + uc * O::kRawBytes};
    Gpu<FMT>::read(copy, unit_block<FMT, K>(row, u), unit_in_block<FMT>(u));
  }
}

// Decodes unit slot uc of stage kc of that row from its raw slot into shared
// row `srow`: its int8 lanes and its SlotMeta (zeros for no unit).
template <int FMT, long long M, int K, bool kGemvOrder>
__device__ __forceinline__ void gemm_decode_unit(long long row, int kc, int uc, GemmShared& sh, int srow) {
  using F = Gpu<FMT>;
  using O = UnitOrder<FMT, K, kGemvOrder>;
  static_assert(sizeof(typename SlotMeta<FMT, kGemvOrder>::Type) <= O::kMetaBytes, "a unit's Meta fits its slot");
  constexpr int kInts = O::kInts;
  const int u = O::unit(kc * O::kPerStage + uc);
  int q[kInts];
  if (u >= 0) {
    const UnitPieces<FMT, M, K, false> slot{{nullptr}, sh.raw[kc % 2][srow] + uc * O::kRawBytes};
    const typename F::Unit unit = F::read(slot, unit_block<FMT, K>(row, u), unit_in_block<FMT>(u));
    F::ints(unit, q);
    if (kLanesLess32<FMT>) {
RAYO_UNROLL
      for (int i = 0; i < kInts; ++i) q[i] = sub_bytes(static_cast<u32>(q[i]), 0x20202020u);
    }
    if constexpr (kGemvOrder)
      store_meta(F::meta(unit), &sh.meta[srow][uc * O::kMetaBytes]);
    else
      store_meta(TileScales<FMT>::of(F::meta(unit)), &sh.meta[srow][uc * O::kMetaBytes]);
  } else {
RAYO_UNROLL
    for (int i = 0; i < kInts; ++i) q[i] = 0;
  }
RAYO_UNROLL
  for (int i = 0; i < kInts; i += 4)
    *reinterpret_cast<int4*>(&sh.w[srow][uc * kInts + i]) = make_int4(q[i], q[i + 1], q[i + 2], q[i + 3]);
}

// The tokens' part of stage kc (activations laid out as format FMT reads
// them): t < nt from the q8 twin, zeros past nt or past the row. With
// kXSums, each segment's sum of activations: as an int (exact tile), or
// times its block's dx as a float's bits (gemm_int8: TileScales' xsum).
template <int FMT, int K, bool kXSums, bool kGemvOrder>
__device__ __forceinline__ void gemm_stage_tokens(const i8* xq, const float2* xds, int nt, int kc, GemmShared& sh) {
  using F = Gpu<FMT>;
  using O = UnitOrder<FMT, K, kGemvOrder>;
  constexpr int kInts = O::kInts, kSegs = O::kSegs, kDs = O::kDs;
  for (int task = threadIdx.x; task < GEMM_TOKENS * O::kPerStage; task += GEMM_THREADS) {
    const int t = task / O::kPerStage, uc = task % O::kPerStage;
    const int u = O::unit(kc * O::kPerStage + uc);
    Act a;
RAYO_UNROLL
    for (int i = 0; i < 4; ++i) a.ds[i] = make_float2(0.0f, 0.0f);  // a unit's load_act sets those it has
    if (t < nt && u >= 0) {
      F::load_act(xq + static_cast<long long>(t) * K, xds + static_cast<long long>(t) * (K / 32), u, a);
    } else {
RAYO_UNROLL
      for (int i = 0; i < kInts; ++i) a.q[i] = 0;
    }
RAYO_UNROLL
    for (int i = 0; i < kInts; i += 4)
      *reinterpret_cast<int4*>(&sh.x[t][uc * kInts + i]) = make_int4(a.q[i], a.q[i + 1], a.q[i + 2], a.q[i + 3]);
RAYO_UNROLL
    for (int i = 0; i < kDs; ++i) sh.ds[t][uc * kDs + i] = a.ds[i];
    if (kXSums) {
RAYO_UNROLL
      for (int k = 0; k < kSegs; ++k) {
        int s = 0;
RAYO_UNROLL
        for (int i = 0; i < 4; ++i) s = __dp4a(0x01010101, a.q[4 * k + i], s);
        sh.xseg[t][uc * kDs + k] =
            kGemvOrder ? s : static_cast<int>(__float_as_uint(a.ds[k].x * static_cast<float>(s)));
      }
    }
  }
}

// Joins a finished lane sum (the s-th in bit-reversed lane order) to its
// output's tree: pairs as warp_sum's (lanes 16 apart, then 8, ...). After
// s = 31, acc holds the whole sum; before, acc restarts from 0.
// (Without a break, so that the stack stays in registers.)
__device__ __forceinline__ void tree_push(float& acc, float (&stack)[5], int s) {
  float v = acc;
  bool carry = true;  // v still climbs
RAYO_UNROLL
  for (int level = 0; level < 5; ++level) {
    const bool odd = (s >> level) & 1;
    if (carry && !odd) stack[level] = v;
    if (carry && odd) v = stack[level] + v;
    carry = carry && odd;
  }
  acc = s == 31 ? v : 0.0f;
}

// The warp's part of stage kc, for its 32 rows of format FMT: every unit's
// segment sums on tensor cores, combined and added to the outputs (with
// kGemvOrder to the lane sums, whose trees complete them). The fragments of
// two segments (16-byte pieces) k, k + 1 at a time come by ldmatrix_x4
// (mma.cuh): a[k], a[k + 1] of 16 rows, or b[k], b[k + 1] of both 8-token
// halves. Shared rows are 68 ints apart, so 8 rows' 16 bytes fall in distinct
// banks.
template <int FMT, int K, int FMT_ORDER, bool kGemvOrder>
__device__ __forceinline__ void gemm_int8_chunk(const GemmShared& sh, int kc, float (&acc)[2][2][4],
                                                float (&stack)[2][2][4][5]) {
  using F = Gpu<FMT>;
  using O = UnitOrder<FMT_ORDER, K, kGemvOrder>;
  constexpr int kInts = O::kInts, kSegs = O::kSegs, kDs = O::kDs, kMeta = O::kMetaBytes;
  static_assert(kSegs % 2 == 0, "segments go by pairs");
  const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
  const int g = lane / 4, t = lane % 4;
  const int row0 = 32 * (warp % 2), tok0 = 16 * (warp / 2);
  const int arow = ldm_a_row(lane), aseg = ldm_a_piece(lane);
  const int btok = tok0 + ldm_b_row(lane), bseg = ldm_b_piece(lane);
  for (int uc = 0; uc < O::kPerStage; ++uc) {
    const int place = kc * O::kPerStage + uc;
    if (place >= O::kPlaces) break;
    if (O::unit(place) >= 0) {
      u32 b[kSegs][2];  // segment k's fragment of tokens 8 ni .. + 7
RAYO_UNROLL
      for (int k = 0; k < kSegs; k += 2) {
        u32 r[4];
        ldmatrix_x4(r, &sh.x[btok][uc * kInts + 4 * (k + bseg)]);
        b[k][0] = r[0], b[k + 1][0] = r[1], b[k][1] = r[2], b[k + 1][1] = r[3];
      }
RAYO_UNROLL
      for (int mi = 0; mi < 2; ++mi) {
        const int r0 = row0 + 16 * mi + g;
        using Meta = typename SlotMeta<FMT, kGemvOrder>::Type;
        const Meta m0 = load_meta<Meta>(&sh.meta[r0][uc * kMeta]);
        const Meta m1 = load_meta<Meta>(&sh.meta[r0 + 8][uc * kMeta]);
        u32 a[kSegs][2];  // segment k's fragment of rows 16 mi .. + 15
RAYO_UNROLL
        for (int k = 0; k < kSegs; k += 2) {
          u32 r[4];
          ldmatrix_x4(r, &sh.w[row0 + 16 * mi + arow][uc * kInts + 4 * (k + aseg)]);
          a[k][0] = r[0], a[k][1] = r[1], a[k + 1][0] = r[2], a[k + 1][1] = r[3];
        }
RAYO_UNROLL
        for (int ni = 0; ni < 2; ++ni) {
          // A pair of segments of one scale sums in one accumulator
          // (kPairedSegments): exact either way, and combine adds no pair.
          int c[kSegs][4];
RAYO_UNROLL
          for (int k = 0; k < kSegs; ++k) {
            c[k][0] = c[k][1] = c[k][2] = c[k][3] = 0;
            mma_s8_16816(F::kPairedSegments && k % 2 == 1 ? c[k - 1] : c[k], a[k], b[k][ni]);
          }
RAYO_UNROLL
          for (int e = 0; e < 4; ++e) {
            const int n = tok0 + 8 * ni + 2 * t + (e & 1);
            const float2* ds = &sh.ds[n][uc * kDs];
            int seg[kSegs];
RAYO_UNROLL
            for (int k = 0; k < kSegs; ++k) seg[k] = c[k][e];
            if constexpr (kGemvOrder) {
              int xseg[kSegs];
RAYO_UNROLL
              for (int k = 0; k < kSegs; ++k) xseg[k] = kTileXSums<FMT> ? sh.xseg[n][uc * kDs + k] : 0;
              acc[mi][ni][e] += F::combine(e < 2 ? m0 : m1, seg, xseg, ds);
            } else {
              float xsum[kSegs];
RAYO_UNROLL
              for (int k = 0; k < kSegs; ++k)
                xsum[k] = kTileXSums<FMT> ? __uint_as_float(static_cast<u32>(sh.xseg[n][uc * kDs + k])) : 0.0f;
              TileScales<FMT>::add(acc[mi][ni][e], e < 2 ? m0 : m1, seg, xsum, ds);
            }
          }
        }
      }
    }
    if (kGemvOrder && O::ends_lane(place)) {
      const int s = place / O::kPerLane;
RAYO_UNROLL
      for (int mi = 0; mi < 2; ++mi)
RAYO_UNROLL
        for (int ni = 0; ni < 2; ++ni)
RAYO_UNROLL
          for (int e = 0; e < 4; ++e) tree_push(acc[mi][ni][e], stack[mi][ni][e], s);
    }
  }
}

// What gemm_tile does with each unit task of stage kc: issue its copies, or
// decode it from its raw slot.
template <int K, bool kGemvOrder>
struct UnitOp {
  GemmShared& sh;
  int kc;
  bool decode;
  template <int FMT, long long M>
  __device__ void operator()(GemmMatrix<FMT, M>, const u8* w, long long row, int uc, int srow) const {
    if (decode)
      gemm_decode_unit<FMT, M, K, kGemvOrder>(row, kc, uc, sh, srow);
    else
      gemm_stage_unit<FMT, M, K, kGemvOrder>(w, row, kc, uc, sh, srow);
  }
};

// Tokens per block: the exact tile's GEMM_TOKENS (its lane sums' trees keep
// 16 outputs' stacks in registers); the int8 tile's two halves of GEMM_TOKENS,
// multiplied one after the other by each stage's weights, staged once (as
// gemm.cuh's f16 tile).
template <bool kGemvOrder>
constexpr int kInt8BlockTokens = kGemvOrder ? GEMM_TOKENS : 2 * GEMM_TOKENS;

// As gemm.cuh's f16 gemm_tile: rows 0..31 of format FMT_LO, 32..63 of FMT_HI
// (the same unit shape: the tokens are staged once, as FMT_LO reads them),
// for kInt8BlockTokens<kGemvOrder> tokens: each half's tokens staged from
// L2 into the token tiles in turn, after the stage's weights.
template <bool kGemvOrder, int K, bool kNorm, int FMT_LO, int FMT_HI, typename Units>
__device__ __forceinline__ void int8_tile(const Units& units, const i8* xq, const float2* xds, const float* xss,
                                          float eps, int nt, GemmShared& sh) {
  static_assert(Gpu<FMT_LO>::kUnit == Gpu<FMT_HI>::kUnit, "one unit shape per tile");
  constexpr bool kXSums = kTileXSums<FMT_LO> || kTileXSums<FMT_HI>;
  constexpr int kHalves = kInt8BlockTokens<kGemvOrder> / GEMM_TOKENS;
  float acc[kHalves][2][2][4], stack[2][2][4][5];
RAYO_UNROLL
  for (int mi = 0; mi < 2; ++mi)
RAYO_UNROLL
    for (int ni = 0; ni < 2; ++ni)
RAYO_UNROLL
      for (int i = 0; i < 4; ++i) {
RAYO_UNROLL
        for (int h = 0; h < kHalves; ++h) acc[h][mi][ni][i] = 0.0f;
RAYO_UNROLL
        for (int l = 0; l < 5; ++l) stack[mi][ni][i][l] = 0.0f;
      }
  const bool lo = threadIdx.x / WARP % 2 == 0;
  constexpr int kStages = UnitOrder<FMT_LO, K, kGemvOrder>::kStages;
  // As the f16 tile: stage kc + 1's weight copies are in flight while stage
  // kc is decoded and multiplied (the tokens are staged from L2 directly).
  units(UnitOp<K, kGemvOrder>{sh, 0, false});
  cp_async_commit();
  for (int kc = 0; kc < kStages; ++kc) {
    if (kc + 1 < kStages) units(UnitOp<K, kGemvOrder>{sh, kc + 1, false});
    cp_async_commit();
    cp_async_wait<1>();  // stage kc's copies have landed ...
    __syncthreads();     // ... everyone's; and the previous stage's multiply is done with the tiles
    units(UnitOp<K, kGemvOrder>{sh, kc, true});
RAYO_UNROLL
    for (int h = 0; h < kHalves; ++h) {
      const int half_nt = nt - GEMM_TOKENS * h < GEMM_TOKENS ? nt - GEMM_TOKENS * h : GEMM_TOKENS;
      if (half_nt <= 0) break;  // the same for the whole block
      if (h > 0) __syncthreads();  // the first half's multiply is done with the token tiles
      gemm_stage_tokens<FMT_LO, K, kXSums, kGemvOrder>(xq + static_cast<long long>(GEMM_TOKENS * h) * K,
                                                       xds + static_cast<long long>(GEMM_TOKENS * h) * (K / 32),
                                                       half_nt, kc, sh);
      __syncthreads();
      if (FMT_LO == FMT_HI || lo)
        gemm_int8_chunk<FMT_LO, K, FMT_LO, kGemvOrder>(sh, kc, acc[h], stack);
      else
        gemm_int8_chunk<FMT_HI, K, FMT_LO, kGemvOrder>(sh, kc, acc[h], stack);
    }
  }
  cp_async_wait<0>();  // nothing is left but an empty group
  __syncthreads();
  // The first call's 1/rms covers every token of the block.
  gemm_tile_results<K, kNorm>(acc[0], xss, eps, nt, sh);
  if constexpr (kHalves > 1) gemm_tile_results<K, false>(acc[kHalves - 1], xss, eps, nt, sh, GEMM_TOKENS);
}
}  // namespace gemm_int8_tiles

// The two tiles as gemm_namespace.cuh picks them: the names each kernel file
// uses. Their sums come out without the norm's 1/rms (kNormInSums), which
// callers apply from sh.inv() after them, as the GEMV does.
#define RAYO_INT8_TILE_NAMESPACE(name, gemv_order)                                                           \
  namespace name {                                                                                          \
  using gemm_int8_tiles::GemmShared;                                                                        \
  constexpr bool kNormInSums = false;                                                                       \
  constexpr int kBlockTokens = gemm_int8_tiles::kInt8BlockTokens<gemv_order>;                              \
  template <int K>                                                                                          \
  using UnitOp = gemm_int8_tiles::UnitOp<K, gemv_order>;                                                    \
  template <int K, bool kNorm, int FMT_LO, int FMT_HI, typename Units>                                      \
  __device__ __forceinline__ void gemm_tile(const Units& units, const i8* xq, const float2* xds,            \
                                            const float* xss, float eps, int nt, GemmShared& sh) {          \
    gemm_int8_tiles::int8_tile<gemv_order, K, kNorm, FMT_LO, FMT_HI>(units, xq, xds, xss, eps, nt, sh);     \
  }                                                                                                         \
  }
RAYO_INT8_TILE_NAMESPACE(gemm_exact, true)
RAYO_INT8_TILE_NAMESPACE(gemm_int8, false)
#undef RAYO_INT8_TILE_NAMESPACE
