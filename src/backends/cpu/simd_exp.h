#pragma once
// e^x on eight floats at once (AVX2 + FMA), for the elementwise ops whose
// scalar std::exp calls cost a prompt step more than the work around them.
//
// Cephes' single-precision method: x = n ln2 + r with |r| <= ln2 / 2 (ln2
// split in two so that n ln2 is exact), a degree-7 polynomial for e^r, and 2^n
// built in the exponent bits. Within 2 ulp of std::exp over the clamped range
// [-87.3, 88.37], which keeps 2^n a normal float; beyond it the result is
// e^-87.3 or e^88.37 (callers divide by 1 + e^x, where both ends are exact
// enough: silu(-100) is -3e-37 instead of -4e-42).
#if defined(__x86_64__)
#include <immintrin.h>

namespace rayo::cpu {

__attribute__((target("avx2,fma"), always_inline)) inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.37f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i pow2n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(pow2n));
}

}  // namespace rayo::cpu
#endif
