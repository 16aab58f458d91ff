#pragma once
// The scale searches behind ggml's reference k-quant (and Q*_0 with importance)
// quantizers. They choose, for a small group of values, integer levels L and a
// scale (and, for the "qkx" variants, a min) that minimise a weighted error.
// Reproducing them operation for operation is what makes our quantized blocks
// byte-identical to llama-quantize's; see quantize.cpp.
#include <cstdint>
#include <cstring>

namespace rayo::quant {

// Round to nearest, ties to even, exactly as ggml's nearest_int: adding
// 1.5 * 2^23 leaves the rounded integer in the low mantissa bits. Valid for
// |x| <= 2^22 - 1; callers clamp first when the input may be larger or NaN.
inline int nearest_int(float x) {
  const float v = x + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

// Symmetric levels: L[i] = clamp(round(x[i] / scale), -nmax, nmax - 1) + nmax,
// returns scale. rmse_type 0: scale from the largest magnitude only; 1: also
// tries 18 nearby scales and refits by least squares with weights
// (quant_weights, or x^2 when null). Mirrors ggml's make_qx_quants.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* quant_weights);

// Q3_K's variant: levels in -nmax..nmax-1 (returned biased by +nmax), weights
// x^2, optional coordinate-descent refinement. Mirrors ggml's make_q3_quants.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse);

// Asymmetric levels 0..nmax with a min <= 0: x ~ scale * L - the_min. Tries
// nstep+1 scales (rmin + rdelta * is + nmax) / (max - min) and keeps the
// weighted least-squares fit with the smallest error (absolute error when
// use_mad). Laux is scratch of n bytes. Mirrors ggml's make_qkx2_quants.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad);

}  // namespace rayo::quant
