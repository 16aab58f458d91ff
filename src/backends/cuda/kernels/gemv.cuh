// Matrix-vector products for decode and small batches, shared by gemv.cu,
// gemv_swiglu.cu and qkv_rope_store.cu.
//
// Work split: a block of GEMV_WARPS warps owns GEMV_ROWS = 32 consecutive
// output rows (one block of 32 of the output's q8 twin, which the block can
// then write itself) for up to TT token rows; warp w computes rows 4w .. 4w+3.
// Lane l reads units l, l + 32, ... of each of its rows (a unit: 32 or 64
// values, weight_formats.cuh), so a warp's loads of one row are contiguous,
// every weight is read with 16-byte loads once per block, and the activations
// of a unit are loaded once for the warp's 4 rows. The loads of all 4 rows are
// issued before any is used.
//
// Two K slices (kSlices = 2: GEMV_SLICES in gemv.cu and qkv_rope_store.cu;
// one token a block, quantized weights): a block of 16 warps, warps 2w and
// 2w + 1 sharing rows 4w .. 4w + 3, each taking every other pass over them
// (warp_rows_q8_sliced), so both warps' loads are in flight at once and each
// walks half the passes, with the one-slice GEMV's bits. A decode GEMV of few
// rows (4096: 128 blocks, one an SM) otherwise runs 8 warps an SM, each
// through K / 32 units of dependent DRAM round trips (Nsight Compute, H100:
// 11% occupancy, 29% of the DRAM bandwidth).
//
// Two kinds of activations:
//  - quantized weights multiply the input's q8 twin (q8_act.cuh) with DP4A;
//  - float weights (F32, F16, BF16) multiply the f32 input, 8 values per load.
// With a fused RMSNorm (NORM) the q8 twin holds x * norm_w and the row's 1/rms
// comes from its ss statistics (computed once, by the input's producer); the
// float path scales x * norm_w by it as it loads x.
//
// Last measured (H100, 2026-11-28, `rayo bench --kernels`, llama3-8b shapes,
// one token, whole-sector layout, two K slices at 4096 rows): Q4_K 4096 x
// 4096 5.85 us (54% of the device-to-device copy bandwidth), gate+up
// 14336 x 4096 x 2 30.6 us (72%), output 128256 x 4096 105 us (94%); Q6_K
// output 157 us (92%); L2 asked for 1.01-1.04 sectors per DRAM sector read
// (Nsight Compute). Tried and measured slower there: software
// pipelining (each pass's weight loads issued before the previous pass's
// DP4As) doubled the registers the weights take (Q6_K 243), so half the
// blocks fit an SM: llama3-8b tg 405 -> 381 t/s. Asking L2 for the first two
// passes' weights (prefetch.global.L2) before the grid dependency wait of a
// programmatic launch (common.cuh): llama3-8b tg 364 -> 287 t/s, qwen2.5-1.5b
// 746 -> 633 (H100): the prefetches compete with the running kernel's loads.
#pragma once
#include "weight_formats.cuh"

#define GEMV_WARPS 8
#define GEMV_THREADS (GEMV_WARPS * WARP)
#define GEMV_ROWS_PER_WARP 4
#define GEMV_ROWS (GEMV_WARPS * GEMV_ROWS_PER_WARP)

__device__ __forceinline__ constexpr bool is_float_format(int f) { return f == FMT_F32 || f == FMT_F16 || f == FMT_BF16; }

// The input of a GEMV: f32 rows (x, float weights) or their q8 twin (q, ds;
// quantized weights); ss and norm_w for a fused RMSNorm.
struct GemvInput {
  const float* x;
  const i8* q;
  const float2* ds;
  const float* ss;
  const float* norm_w;  // float path only: the q8 twin already holds x * norm_w
};

// Grid: (token tiles, blocks of output rows) for tiles of several tokens.
// The token tiles are the fast axis so that the blocks reading the same
// weight rows for different tokens run together and the weights stream from
// DRAM once per step, not once per tile (L2 serves the others): 8 sequences
// decoded together 1 072 -> 1 133 t/s (H100, llama3-8b Q4_K_M). Decode's
// one-token tiles keep the rows on x, (blocks of rows, 1), and the index is
// unsigned as blockIdx is: so decode's machine code stays what it was (a
// signed index changed its address arithmetic, and tg128 read 1.2% slower).
template <int kTile>
__device__ __forceinline__ unsigned row_block() { return kTile == 1 ? blockIdx.x : blockIdx.y; }

// This block's token tile (kTile rows; the grid's other axis): its first row
// t0 and how many of the step's *n_rows rows it holds, nt; false when it
// holds none.
template <int kTile>
__device__ __forceinline__ bool token_tile(const int* n_rows, int& t0, int& nt) {
  const int n = *n_rows;
  t0 = (kTile == 1 ? blockIdx.y : blockIdx.x) * kTile;
  if (t0 >= n) return false;
  nt = n - t0 < kTile ? n - t0 : kTile;
  return true;
}

// 1/rms of the token rows t < nt (1 without a norm). Every lane of the warp must call it.
template <int K, int kTokens, bool kNorm>
__device__ __forceinline__ void row_inv_rms(const float* ss, int nt, float eps, float* inv) {
RAYO_UNROLL
  for (int t = 0; t < kTokens; ++t) inv[t] = 1.0f;
  if (kNorm) {
RAYO_UNROLL
    for (int t = 0; t < kTokens; ++t)
      if (t < nt) inv[t] = inv_rms<K>(ss + t * ((K + 31) / 32), eps);
  }
}

// A warp's 4 rows: row0 .. row0 + 3, those past M replaced by M - 1 (read, not written).
template <long long M>
__device__ __forceinline__ void clamp_rows(long long row0, long long (&rows)[GEMV_ROWS_PER_WARP]) {
RAYO_UNROLL
  for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) rows[r] = row0 + r < M ? row0 + r : M - 1;
}


// Warps 2p and 2p + 1 of the block meet: named barrier 1 + p, 64 threads (the
// emulator, which has no named barriers, meets the whole block: every thread
// of it must call this as often).
__device__ __forceinline__ void pair_sync(int p) {
#ifdef RAYO_SIMT
  (void)p;
  __syncthreads();
#else
  asm volatile("bar.sync %0, 64;" ::"r"(1 + p) : "memory");
#endif
}

// acc[r][0] = W[rows[r]] . x over the K columns of an M x K quantized matrix
// for one token (acc zero on entry), by a pair of warps (two K slices): in pass i, lane l of slice
// s (warp % 2) takes unit 64 i + 32 s + l of the 4 rows. Slice 1 hands its
// dots to slice 0 through shared memory (two buffers, so a pass's hand-over
// overlaps the next pass's loads), and slice 0 adds them in the one-slice
// order, units l, l + 32, l + 64, ...: the same float additions in the same
// order, so the sums are warp_rows_q8's bits (a row decoded alone or in a
// batch's token tile gives the same). Every lane of slice 0 gets the sums
// (slice 1's are not). Every thread of the block calls it.
template <int FMT, long long M, int K>
__device__ __forceinline__ void warp_rows_q8_sliced(const u8* w, const long long (&rows)[GEMV_ROWS_PER_WARP],
                                                    const i8* xq, const float2* xds,
                                                    float (&acc)[GEMV_ROWS_PER_WARP][1]) {
  using F = Gpu<FMT>;
  constexpr int kUnits = K / F::kUnit;
  constexpr int kPasses = (kUnits + 2 * WARP - 1) / (2 * WARP);
  __shared__ float handed[2][GEMV_WARPS][GEMV_ROWS_PER_WARP][WARP];
  const int lane = threadIdx.x % WARP, slice = threadIdx.x / WARP % 2, pair = threadIdx.x / (2 * WARP);
  for (int i = 0; i < kPasses; ++i) {
    const int u = 2 * WARP * i + WARP * slice + lane;
    float d[GEMV_ROWS_PER_WARP];
    if (u < kUnits) {
      typename F::Unit wu[GEMV_ROWS_PER_WARP];
RAYO_UNROLL
      for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) wu[r] = load_unit<FMT, M, K>(w, rows[r], u);
      Act a;
      F::load_act(xq, xds, u, a);
RAYO_UNROLL
      for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) d[r] = unit_dot<FMT>(wu[r], a);
      if (slice == 1) {
RAYO_UNROLL
        for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) handed[i % 2][pair][r][lane] = d[r];
      }
    }
    pair_sync(pair);
    if (slice == 0) {
      if (u < kUnits) {
RAYO_UNROLL
        for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) acc[r][0] += d[r];
      }
      if (u + WARP < kUnits) {
RAYO_UNROLL
        for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) acc[r][0] += handed[i % 2][pair][r][lane];
      }
    }
  }
RAYO_UNROLL
  for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) acc[r][0] = warp_sum(acc[r][0]);
}

// acc[r][t] = W[rows[r]] . x[t] over the K columns of an M x K quantized
// matrix (GPU layout), for r < 4 and tokens t < nt. Every lane gets the sums.
template <int FMT, long long M, int K, int kTokens>
__device__ __forceinline__ void warp_rows_q8(const u8* w, const long long (&rows)[GEMV_ROWS_PER_WARP], const i8* xq,
                                             const float2* xds, int nt, float (&acc)[GEMV_ROWS_PER_WARP][kTokens]) {
  using F = Gpu<FMT>;
  constexpr int kUnits = K / F::kUnit;
  for (int u = threadIdx.x % WARP; u < kUnits; u += WARP) {
    typename F::Unit wu[GEMV_ROWS_PER_WARP];
RAYO_UNROLL
    for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) wu[r] = load_unit<FMT, M, K>(w, rows[r], u);
    if constexpr (kTokens == 1) {
      Act a;
      F::load_act(xq, xds, u, a);
RAYO_UNROLL
      for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) acc[r][0] += unit_dot<FMT>(wu[r], a);
    } else {
      // A token tile decodes the rows' units once, for all its tokens:
      // decoding per token made a 4-token tile cost 4 times the arithmetic of
      // one token.
      DecodedUnit<FMT> d[GEMV_ROWS_PER_WARP];
RAYO_UNROLL
      for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) d[r] = decode_unit<FMT>(wu[r]);
RAYO_UNROLL
      for (int t = 0; t < kTokens; ++t) {
        if (t < nt) {
          Act a;
          F::load_act(xq + static_cast<long long>(t) * K, xds + static_cast<long long>(t) * (K / 32), u, a);
RAYO_UNROLL
          for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) acc[r][t] += decoded_dot<FMT>(d[r], a);
        }
      }
    }
  }
RAYO_UNROLL
  for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r)
RAYO_UNROLL
    for (int t = 0; t < kTokens; ++t) acc[r][t] = warp_sum(acc[r][t]);
}

// As warp_rows_q8 for two matrices of the same shape read with the same input
// (gate and up): the loads of all 8 rows are in flight together.
template <int F1, int F2, long long M, int K, int kTokens>
__device__ __forceinline__ void warp_rows_q8_pair(const u8* w1, const u8* w2, const long long (&rows)[GEMV_ROWS_PER_WARP],
                                                  const i8* xq, const float2* xds, int nt,
                                                  float (&acc1)[GEMV_ROWS_PER_WARP][kTokens],
                                                  float (&acc2)[GEMV_ROWS_PER_WARP][kTokens]) {
  using A = Gpu<F1>;
  using B = Gpu<F2>;
  static_assert(A::kUnit == B::kUnit, "paired formats need the same unit");
  constexpr int kUnits = K / A::kUnit;
  for (int u = threadIdx.x % WARP; u < kUnits; u += WARP) {
    typename A::Unit wa[GEMV_ROWS_PER_WARP];
    typename B::Unit wb[GEMV_ROWS_PER_WARP];
RAYO_UNROLL
    for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) {
      wa[r] = load_unit<F1, M, K>(w1, rows[r], u);
      wb[r] = load_unit<F2, M, K>(w2, rows[r], u);
    }
RAYO_UNROLL
    for (int t = 0; t < kTokens; ++t) {
      if (t < nt) {
        const i8* q = xq + static_cast<long long>(t) * K;
        const float2* ds = xds + static_cast<long long>(t) * (K / 32);
        Act a;
        A::load_act(q, ds, u, a);
RAYO_UNROLL
        for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) acc1[r][t] += unit_dot<F1>(wa[r], a);
        if constexpr (F1 != F2) B::load_act(q, ds, u, a);
RAYO_UNROLL
        for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) acc2[r][t] += unit_dot<F2>(wb[r], a);
      }
    }
  }
RAYO_UNROLL
  for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r)
RAYO_UNROLL
    for (int t = 0; t < kTokens; ++t) {
      acc1[r][t] = warp_sum(acc1[r][t]);
      acc2[r][t] = warp_sum(acc2[r][t]);
    }
}

// Eight consecutive values of a float-format row from one 16-byte load (two for F32).
template <int FMT>
__device__ __forceinline__ void load8_vec(const u8* p, float* v) {
  if constexpr (FMT == FMT_F32) {
    const uint4 a = ld_stream16(p), b = ld_stream16(p + 16);
RAYO_UNROLL
    for (int i = 0; i < 4; ++i) {
      v[i] = __uint_as_float(word(a, i));
      v[4 + i] = __uint_as_float(word(b, i));
    }
  } else {
    const uint4 a = ld_stream16(p);
RAYO_UNROLL
    for (int i = 0; i < 4; ++i) {
      const u32 two = word(a, i);
      v[2 * i] = FMT == FMT_F16 ? h2f(static_cast<u16>(two)) : bf2f(static_cast<u16>(two));
      v[2 * i + 1] = FMT == FMT_F16 ? h2f(static_cast<u16>(two >> 16)) : bf2f(static_cast<u16>(two >> 16));
    }
  }
}

// As warp_rows_q8 for a float-format matrix (rows as stored) and f32 inputs x,
// normalised on the fly (x * inv[t] * norm_w) when kNorm.
template <int FMT, long long M, int K, int kTokens, bool kNorm>
__device__ __forceinline__ void warp_rows_f32(const u8* w, const long long (&row_ids)[GEMV_ROWS_PER_WARP],
                                              const float* x, const float* norm_w, const float* inv, int nt,
                                              float (&acc)[GEMV_ROWS_PER_WARP][kTokens]) {
  constexpr long long kRowBytes = static_cast<long long>(K) * Fmt<FMT>::bytes;
  const u8* rows[GEMV_ROWS_PER_WARP];
RAYO_UNROLL
  for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) rows[r] = w + row_ids[r] * kRowBytes;
  const int lane = threadIdx.x % WARP;
  // Vector loads need 16-byte aligned rows: K a multiple of 8 (of 4 for F32, but
  // a group is 8 values either way).
  constexpr int kGroups = K % 8 == 0 ? K / 8 : 0;
  for (int g = lane; g < kGroups; g += WARP) {
    float wv[GEMV_ROWS_PER_WARP][8];
RAYO_UNROLL
    for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) load8_vec<FMT>(rows[r] + 8LL * g * Fmt<FMT>::bytes, wv[r]);
    float nw[8];
    if (kNorm) {
      const float4 a = __ldg(reinterpret_cast<const float4*>(norm_w + 8 * g));
      const float4 b = __ldg(reinterpret_cast<const float4*>(norm_w + 8 * g + 4));
      nw[0] = a.x, nw[1] = a.y, nw[2] = a.z, nw[3] = a.w, nw[4] = b.x, nw[5] = b.y, nw[6] = b.z, nw[7] = b.w;
    }
RAYO_UNROLL
    for (int t = 0; t < kTokens; ++t) {
      if (t < nt) {
        const float4* xp = reinterpret_cast<const float4*>(x + static_cast<long long>(t) * K + 8 * g);
        const float4 a = __ldg(xp), b = __ldg(xp + 1);
        float xv[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        if (kNorm) {
RAYO_UNROLL
          for (int i = 0; i < 8; ++i) xv[i] = xv[i] * inv[t] * nw[i];
        }
RAYO_UNROLL
        for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r)
RAYO_UNROLL
          for (int i = 0; i < 8; ++i) acc[r][t] += wv[r][i] * xv[i];
      }
    }
  }
  // Rows not 16-byte aligned (K % 8 != 0): one value at a time.
  if constexpr (kGroups == 0) {
    for (int k = lane; k < K; k += WARP) {
      float nwk = kNorm ? norm_w[k] : 1.0f;
RAYO_UNROLL
      for (int t = 0; t < kTokens; ++t) {
        if (t < nt) {
          float xv = x[static_cast<long long>(t) * K + k];
          if (kNorm) xv = xv * inv[t] * nwk;
RAYO_UNROLL
          for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r) acc[r][t] += load1<FMT>(rows[r], k) * xv;
        }
      }
    }
  }
RAYO_UNROLL
  for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r)
RAYO_UNROLL
    for (int t = 0; t < kTokens; ++t) acc[r][t] = warp_sum(acc[r][t]);
}

// The sums of one warp's 4 rows over one matrix: the q8 path for quantized
// formats (with kSlices 2, in slice 0's warps), the f32 path for float
// formats; times 1/rms with kNorm.
template <int FMT, long long M, int K, int kTokens, bool kNorm, int kSlices = 1>
__device__ __forceinline__ void warp_rows(const u8* w, const long long (&rows)[GEMV_ROWS_PER_WARP],
                                          const GemvInput& in, const float* inv, int nt,
                                          float (&acc)[GEMV_ROWS_PER_WARP][kTokens]) {
  static_assert(kSlices == 1 || (kSlices == 2 && kTokens == 1 && !is_float_format(FMT)),
                "two K slices: one token, quantized weights");
RAYO_UNROLL
  for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r)
RAYO_UNROLL
    for (int t = 0; t < kTokens; ++t) acc[r][t] = 0.0f;
  if constexpr (is_float_format(FMT)) {
    warp_rows_f32<FMT, M, K, kTokens, kNorm>(w, rows, in.x, in.norm_w, inv, nt, acc);
  } else {
    if constexpr (kSlices == 2)
      warp_rows_q8_sliced<FMT, M, K>(w, rows, in.q, in.ds, acc);
    else
      warp_rows_q8<FMT, M, K, kTokens>(w, rows, in.q, in.ds, nt, acc);
    if (kNorm) {
RAYO_UNROLL
      for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r)
RAYO_UNROLL
        for (int t = 0; t < kTokens; ++t) acc[r][t] *= inv[t];
    }
  }
}

// Whether warp_rows_q8_pair multiplies formats F1 and F2 together for kTokens
// tokens: quantized formats with the same unit, and at most 2 tokens (beyond,
// 8 rows of weights and their sums outgrow the registers of the heavier formats).
template <int F1, int F2, int kTokens>
__device__ __forceinline__ constexpr bool pairable() {
  if constexpr (is_float_format(F1) || is_float_format(F2) || kTokens > 2)
    return false;
  else
    return Gpu<F1>::kUnit == Gpu<F2>::kUnit;
}

// The sums of one warp's 4 rows over two matrices read with the same input
// (gate and up): interleaved when pairable, else one after the other.
template <int F1, int F2, long long M, int K, int kTokens, bool kNorm>
__device__ __forceinline__ void warp_rows_pair(const u8* w1, const u8* w2, const long long (&rows)[GEMV_ROWS_PER_WARP],
                                               const GemvInput& in, const float* inv, int nt,
                                               float (&acc1)[GEMV_ROWS_PER_WARP][kTokens],
                                               float (&acc2)[GEMV_ROWS_PER_WARP][kTokens]) {
  if constexpr (pairable<F1, F2, kTokens>()) {
RAYO_UNROLL
    for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r)
RAYO_UNROLL
      for (int t = 0; t < kTokens; ++t) acc1[r][t] = acc2[r][t] = 0.0f;
    warp_rows_q8_pair<F1, F2, M, K, kTokens>(w1, w2, rows, in.q, in.ds, nt, acc1, acc2);
    if (kNorm) {
RAYO_UNROLL
      for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r)
RAYO_UNROLL
        for (int t = 0; t < kTokens; ++t) {
          acc1[r][t] *= inv[t];
          acc2[r][t] *= inv[t];
        }
    }
  } else {
    warp_rows<F1, M, K, kTokens, kNorm>(w1, rows, in, inv, nt, acc1);
    warp_rows<F2, M, K, kTokens, kNorm>(w2, rows, in, inv, nt, acc2);
  }
}

// The output's twin (q8_act.cuh) from a block's 32 output rows: out[t][i] is
// row 32 * rb + i of token t (0 past the matrix), in shared memory, after
// a __syncthreads. M is the output width (K of the consumer); kEmitNorm uses
// norm_w (the consumer's RMSNorm weight); q, ds, ss point at the tile's first
// token row (absent parts: nullptr). Warp w of the block's n writes tokens w,
// w + n, ...
template <long long M, bool kEmitNorm>
__device__ __forceinline__ void emit_twin_rows(const float (*out)[GEMV_ROWS], unsigned rb, int nt, const float* norm_w,
                                               i8* q, float2* ds, float* ss) {
  const int lane = threadIdx.x % WARP;
  const long long col = static_cast<long long>(rb) * GEMV_ROWS + lane;
  const float nw = kEmitNorm && col < M ? norm_w[col] : 0.0f;
  for (int t = threadIdx.x / WARP; t < nt; t += blockDim.x / WARP) {
    const TwinRow row = twin_row<M>(q, ds, ss, t);
    emit_block32<kEmitNorm>(out[t][lane], nw, static_cast<int>(rb), row.q, row.ds, row.ss);
  }
}
