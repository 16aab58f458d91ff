#include "backends/cpu/encoder_decoder_ops.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/simd_exp.h"

namespace rayo::cpu {

void layer_norm_row(const float* x, const float* w, const float* b, float* y, int64_t cols, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < cols; ++i) sum += x[i];
  const double mean = sum / static_cast<double>(cols);
  double squares = 0.0;
  for (int64_t i = 0; i < cols; ++i) squares += (x[i] - mean) * (x[i] - mean);
  const float m = static_cast<float>(mean);
  const float scale = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(cols) + eps));
  for (int64_t i = 0; i < cols; ++i) y[i] = (x[i] - m) * scale * w[i] + b[i];
}

namespace {

constexpr float kInvSqrt2 = 0.70710678118654752440f;

#if defined(__x86_64__)
// erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7, under
// float rounding of the GELU it feeds): erf(z) = 1 - t (a1 + t (a2 + ...)) e^-z^2,
// t = 1 / (1 + p z) for z >= 0, odd in z. std::erf per value cost an encoder
// window of Whisper tiny about a fifth of a second.
__attribute__((target("avx2,fma"))) int64_t gelu_avx2(const float* x, float* y, int64_t n) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 z = _mm256_mul_ps(v, _mm256_set1_ps(kInvSqrt2));
    const __m256 az = _mm256_andnot_ps(sign_bit, z);
    const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), az, one));
    __m256 p = _mm256_set1_ps(1.061405429f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
    p = _mm256_mul_ps(p, t);
    const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(az, az)));
    const __m256 erf_abs = _mm256_fnmadd_ps(p, e, one);
    const __m256 erf = _mm256_or_ps(erf_abs, _mm256_and_ps(z, sign_bit));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, erf)));
  }
  return i;
}

// The largest of x[0 .. n - n % 8), or -inf: eight lanes, four vectors at a
// time (a scalar loop waits on each comparison's latency; the maximum is the
// same in any order).
__attribute__((target("avx2,fma"))) int64_t max_avx2(const float* x, int64_t n, float& max) {
  __m256 m[4];
  for (auto& v : m) v = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int j = 0; j < 4; ++j) m[j] = _mm256_max_ps(m[j], _mm256_loadu_ps(x + i + 8 * j));
  for (; i + 8 <= n; i += 8) m[0] = _mm256_max_ps(m[0], _mm256_loadu_ps(x + i));
  const __m256 v = _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3]));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  for (float lane : lanes) max = std::max(max, lane);
  return i;
}

// The first i < n - n % 8 with x[i] == value, or n - n % 8.
__attribute__((target("avx2,fma"))) int64_t find_avx2(const float* x, int64_t n, float value) {
  const __m256 v = _mm256_set1_ps(value);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    if (const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), v, _CMP_EQ_OQ)); mask != 0)
      return i + __builtin_ctz(static_cast<unsigned>(mask));
  return i;
}

// x_i = e^(scale (x_i - max)) for the row's first n - n % 8 values, adding them to sum.
__attribute__((target("avx2,fma"))) int64_t scaled_exp_avx2(float* x, int64_t n, float scale, float max, double& sum) {
  const __m256 s = _mm256_set1_ps(scale), m = _mm256_set1_ps(max);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_mul_ps(s, _mm256_sub_ps(_mm256_loadu_ps(x + i), m)));
    _mm256_storeu_ps(x + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  for (float lane : lanes) sum += lane;
  return i;
}

__attribute__((target("avx2,fma"))) int64_t sum_exp_avx2(const float* x, int64_t n, float shift, double& sum) {
  const __m256 m = _mm256_set1_ps(shift);
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
    lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(lo, hi));
  sum += (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  return i;
}
#endif

}  // namespace

double sum_exp(const float* x, int64_t n, float shift) {
  double sum = 0.0;
  int64_t i = 0;
#if defined(__x86_64__)
  if (active_isa() != Isa::Scalar) i = sum_exp_avx2(x, n, shift, sum);
#endif
  for (; i < n; ++i) sum += std::exp(x[i] - shift);
  return sum;
}

float row_max(const float* x, int64_t n) {
  float max = -INFINITY;
  int64_t i = 0;
#if defined(__x86_64__)
  if (active_isa() != Isa::Scalar) i = max_avx2(x, n, max);
#endif
  for (; i < n; ++i) max = std::max(max, x[i]);
  return max;
}

int64_t row_argmax(const float* x, int64_t n) {
  const float max = row_max(x, n);
  int64_t i = 0;
#if defined(__x86_64__)
  if (active_isa() != Isa::Scalar) i = find_avx2(x, n, max);
#endif
  for (; i < n; ++i)
    if (x[i] == max) return i;
  // No element equals the maximum: NaNs (which std::max passes over) or an
  // empty row; std::max_element's answer.
  return std::max_element(x, x + n) - x;
}

void softmax_row(float* x, int64_t n, float scale) {
  const float max = row_max(x, n);
  int64_t i = 0;
  double sum = 0.0;
#if defined(__x86_64__)
  if (active_isa() != Isa::Scalar) i = scaled_exp_avx2(x, n, scale, max, sum);
#endif
  for (; i < n; ++i) {
    x[i] = std::exp(scale * (x[i] - max));
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (i = 0; i < n; ++i) x[i] *= inv;
}

void gelu_row(const float* x, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__)
  if (active_isa() != Isa::Scalar) i = gelu_avx2(x, y, n);
#endif
  for (; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
}

void conv1d_unfold_row(const float* in, int64_t channels, int64_t in_frames, bool channel_major, int64_t t,
                       int stride, float* row) {
  for (int k = 0; k < 3; ++k) {
    const int64_t f = t * stride + k - 1;
    const bool inside = f >= 0 && f < in_frames;
    for (int64_t c = 0; c < channels; ++c)
      row[c * 3 + k] = !inside ? 0.0f : channel_major ? in[c * in_frames + f] : in[f * channels + c];
  }
}

}  // namespace rayo::cpu
