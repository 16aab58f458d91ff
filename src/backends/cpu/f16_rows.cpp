#include "backends/cpu/f16_rows.h"

#include "common/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rayo::cpu {
namespace {

#if defined(__x86_64__)
bool has_f16c() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                         __builtin_cpu_supports("f16c");
  return ok;
}

__attribute__((target("avx2,fma,f16c"))) void f32_to_f16_avx2(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

__attribute__((target("avx2,fma,f16c"))) void f16_to_f32_avx2(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  for (; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

__attribute__((target("avx2,fma,f16c"))) float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma,f16c"))) float dot_f32_f16_avx2(const float* x, const uint16_t* y, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + i))), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8),
                           _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + i + 8))), acc1);
  }
  for (; i + 8 <= n; i += 8)
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + i))), acc0);
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += x[i] * fp16_to_fp32(y[i]);
  return sum;
}

__attribute__((target("avx2,fma,f16c"))) void axpy_f16_avx2(float a, const uint16_t* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))),
                                            _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
}

__attribute__((target("avx2,fma"))) float dot_f32_avx2(const float* x, const float* y, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc0);
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

__attribute__((target("avx2,fma"))) void axpy_f32_avx2(float a, const float* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}
#else
bool has_f16c() { return false; }
#endif

}  // namespace

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
#if defined(__x86_64__)
  if (has_f16c()) return f32_to_f16_avx2(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void f16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
#if defined(__x86_64__)
  if (has_f16c()) return f16_to_f32_avx2(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

float dot_f32_f16(const float* x, const uint16_t* y, int64_t n) {
#if defined(__x86_64__)
  if (has_f16c()) return dot_f32_f16_avx2(x, y, n);
#endif
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i] * fp16_to_fp32(y[i]);
  return sum;
}

void axpy_f16(float a, const uint16_t* x, float* y, int64_t n) {
#if defined(__x86_64__)
  if (has_f16c()) return axpy_f16_avx2(a, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
}

float dot_f32(const float* x, const float* y, int64_t n) {
#if defined(__x86_64__)
  if (has_f16c()) return dot_f32_avx2(x, y, n);
#endif
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

void axpy_f32(float a, const float* x, float* y, int64_t n) {
#if defined(__x86_64__)
  if (has_f16c()) return axpy_f32_avx2(a, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace rayo::cpu
