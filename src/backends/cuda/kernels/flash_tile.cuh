// The step of a flash-attention tile shared by attention_prefill.cu and
// cross_attention.cu's dense_attention_tc: a warp's 16 query rows (mma.cuh
// fragment rows gr and gr + 8) against a tile of kKeys keys whose scores are
// in s (masked ones -inf), values in shared rows of kRowWords words (two
// halves each). Online softmax: each row's running max m and sum l, its output
// accumulators rescaled by exp(m_old - m_new); then O += P V on tensor cores,
// P = exp(S - m) rounded to f16, taken straight from the score accumulators
// as the A fragments of the next product. A row with nothing visible yet keeps
// m = -inf, l = 0.
#pragma once
#include "mma.cuh"

// Half d of a shared row of words, as the low half of a word.
__device__ __forceinline__ u32 flash_half(const u32* row, int d) { return (row[d >> 1] >> (16 * (d & 1))) & 0xFFFFu; }

struct FlashRows {
  float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.0f, l_hi = 0.0f;
};

template <int kKeys, int kDimTiles, int kRowWords>
__device__ __forceinline__ void flash_step(float (&s)[kKeys / 8][4], const u32 (*vs)[kRowWords], int gr, int tq,
                                           FlashRows& r, float (&o)[kDimTiles][4]) {
  float mx_lo = -INFINITY, mx_hi = -INFINITY;
RAYO_UNROLL
  for (int nj = 0; nj < kKeys / 8; ++nj) {
    mx_lo = fmaxf(mx_lo, fmaxf(s[nj][0], s[nj][1]));
    mx_hi = fmaxf(mx_hi, fmaxf(s[nj][2], s[nj][3]));
  }
  // A row's scores of the tile lie in the 4 lanes of its quad.
RAYO_UNROLL
  for (int o2 = 1; o2 < 4; o2 <<= 1) {
    mx_lo = fmaxf(mx_lo, __shfl_xor_sync(FULL_MASK, mx_lo, o2));
    mx_hi = fmaxf(mx_hi, __shfl_xor_sync(FULL_MASK, mx_hi, o2));
  }
  const float new_lo = fmaxf(r.m_lo, mx_lo), new_hi = fmaxf(r.m_hi, mx_hi);
  const float c_lo = new_lo == -INFINITY ? 1.0f : expf(r.m_lo - new_lo);
  const float c_hi = new_hi == -INFINITY ? 1.0f : expf(r.m_hi - new_hi);
  r.m_lo = new_lo;
  r.m_hi = new_hi;
  float sum_lo = 0.0f, sum_hi = 0.0f;
RAYO_UNROLL
  for (int nj = 0; nj < kKeys / 8; ++nj)
RAYO_UNROLL
    for (int i = 0; i < 4; ++i) {
      const bool hi = i >= 2;
      const float p = s[nj][i] == -INFINITY ? 0.0f : expf(s[nj][i] - (hi ? r.m_hi : r.m_lo));
      s[nj][i] = p;
      if (hi)
        sum_hi += p;
      else
        sum_lo += p;
    }
RAYO_UNROLL
  for (int o2 = 1; o2 < 4; o2 <<= 1) {
    sum_lo += __shfl_xor_sync(FULL_MASK, sum_lo, o2);
    sum_hi += __shfl_xor_sync(FULL_MASK, sum_hi, o2);
  }
  r.l_lo = r.l_lo * c_lo + sum_lo;
  r.l_hi = r.l_hi * c_hi + sum_hi;
RAYO_UNROLL
  for (int d = 0; d < kDimTiles; ++d) {
    o[d][0] *= c_lo;
    o[d][1] *= c_lo;
    o[d][2] *= c_hi;
    o[d][3] *= c_hi;
  }
  // P's accumulators of key tiles 2kk, 2kk + 1 are the A fragment of step kk;
  // V as the B fragments (B[k][n] = V[k][n], two rows a word).
RAYO_UNROLL
  for (int kk = 0; kk < kKeys / 16; ++kk) {
    const u32 pa[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]), pack_half2(s[2 * kk][2], s[2 * kk][3]),
                       pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
    const int j0 = 16 * kk + 2 * tq;
RAYO_UNROLL
    for (int d = 0; d < kDimTiles; ++d) {
      const int col = 8 * d + gr;
      const u32 b[2] = {flash_half(vs[j0], col) | (flash_half(vs[j0 + 1], col) << 16),
                        flash_half(vs[j0 + 8], col) | (flash_half(vs[j0 + 9], col) << 16)};
      mma_16816(o[d], pa, b);
    }
  }
}
