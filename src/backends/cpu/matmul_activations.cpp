#include "backends/cpu/matmul_activations.h"

#include <cmath>
#include <cstring>

#include "common/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif
// GCC 12 flags the deliberately undefined registers inside its AVX-512
// intrinsic headers (-Wuninitialized false positives); silence just that.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace rayo::cpu {
namespace {

// Scalar reference. The multiply x * id and round-to-nearest-even are exactly
// what the SIMD versions do (cvtps2dq rounds to nearest even by default).
inline float inv_scale(float amax) { return amax > 0.0f ? 127.0f / amax : 0.0f; }

void quantize_block_scalar(const float* x, int n, int8_t* q, float* d) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  const float id = inv_scale(amax);
  *d = amax / 127.0f;
  for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(std::nearbyint(x[i] * id));
}

// Rounds to half precision and back, as ggml's GGML_FP32_TO_FP16 stores it.
inline float round_to_half(float v) { return fp16_to_fp32(fp32_to_fp16(v)); }

// The sum of q, then the block's half-precision d and s (from the unrounded d).
void fill_sums32(ActBlock32& b) {
  int s = 0;
  for (int i = 0; i < 32; ++i) s += b.qs[i];
  b.sum = s;
  b.s = round_to_half(b.d * static_cast<float>(s));
  b.d = round_to_half(b.d);
}

void fill_sumsk(ActBlockK& b) {
  for (int i = 0; i < 16; ++i) {
    int s = 0;
    for (int j = 0; j < 16; ++j) s += b.qs[16 * i + j];
    b.bsum16[i] = static_cast<int16_t>(s);
  }
  for (int i = 0; i < 8; ++i) b.bsum32[i] = static_cast<int16_t>(b.bsum16[2 * i] + b.bsum16[2 * i + 1]);
  std::memset(b.pad, 0, sizeof b.pad);
}

#if defined(__x86_64__)
// Quantizes n (a multiple of 16) floats; same arithmetic as quantize_block_scalar.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void quantize_block_avx512(
    const float* x, int n, int8_t* q, float* d) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  __m512 vmax = _mm512_setzero_ps();
  for (int i = 0; i < n; i += 16) vmax = _mm512_max_ps(vmax, _mm512_andnot_ps(sign, _mm512_loadu_ps(x + i)));
  const float amax = _mm512_reduce_max_ps(vmax);
  const float id = inv_scale(amax);
  *d = amax / 127.0f;
  const __m512 vid = _mm512_set1_ps(id);
  for (int i = 0; i < n; i += 16) {
    const __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i), vid));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtsepi32_epi8(v));
  }
}

__attribute__((target("avx2,fma,f16c"))) void quantize_block_avx2(const float* x, int n, int8_t* q,
                                                                   float* d) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 vmax = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  const float amax = _mm_cvtss_f32(m);
  const float id = inv_scale(amax);
  *d = amax / 127.0f;
  const __m256 vid = _mm256_set1_ps(id);
  for (int i = 0; i < n; i += 32) {
    const __m256i a = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), vid));
    const __m256i b = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8), vid));
    const __m256i c = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 16), vid));
    const __m256i e = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 24), vid));
    // packs interleave 128-bit lanes; the permute restores element order.
    const __m256i ab = _mm256_packs_epi32(a, b), ce = _mm256_packs_epi32(c, e);
    __m256i bytes = _mm256_packs_epi16(ab, ce);
    bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), bytes);
  }
}
#endif

void quantize_block(Isa isa, const float* x, int n, int8_t* q, float* d) {
#if defined(__x86_64__)
  if (isa == Isa::Avx512) return quantize_block_avx512(x, n, q, d);
  if (isa == Isa::Avx2) return quantize_block_avx2(x, n, q, d);
#endif
  quantize_block_scalar(x, n, q, d);
}

}  // namespace

void quantize_act32(Isa isa, const float* x, int64_t k, ActBlock32* out) {
  for (int64_t b = 0; b < k / 32; ++b) {
    quantize_block(isa, x + 32 * b, 32, out[b].qs, &out[b].d);
    fill_sums32(out[b]);
  }
}

void quantize_actk(Isa isa, const float* x, int64_t k, ActBlockK* out) {
  for (int64_t b = 0; b < k / 256; ++b) {
    quantize_block(isa, x + 256 * b, 256, out[b].qs, &out[b].d);
    fill_sumsk(out[b]);
  }
}

}  // namespace rayo::cpu
