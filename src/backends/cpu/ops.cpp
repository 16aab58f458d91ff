#include "backends/cpu/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/f16_rows.h"
#include "backends/cpu/simd_exp.h"

namespace rayo::cpu {

void rms_norm_row(const float* x, const float* w, float* y, int64_t cols, int group, float eps) {
  for (int64_t g0 = 0; g0 < cols; g0 += group) {
    double sum = 0.0;
    for (int i = 0; i < group; ++i) sum += static_cast<double>(x[g0 + i]) * x[g0 + i];
    const float scale = 1.0f / std::sqrt(static_cast<float>(sum / group) + eps);
    for (int i = 0; i < group; ++i) y[g0 + i] = x[g0 + i] * scale * w[i];
  }
}

void add_row(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

namespace {

constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kGeluCoefA = 0.044715f;

#if defined(__x86_64__)
// Eight values at a time with exp8; the row's last n % 8 values take the
// scalar path, so a value's result depends on its place in the row only, never
// on how many rows a step holds.
__attribute__((target("avx2,fma"))) int64_t swiglu_avx2(const float* gate, const float* up, float* y, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
  }
  return i;
}

// GELU-tanh as x / (1 + e^(-2u)) (= x/2 · (1 + tanh u)), u = √(2/π) x (1 + 0.044715 x²),
// in the same operations as the scalar tail below.
__attribute__((target("avx2,fma"))) int64_t geglu_avx2(const float* gate, const float* up, float* y, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f), a = _mm256_set1_ps(kGeluCoefA), m2c = _mm256_set1_ps(-2.0f * kSqrt2OverPi);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 t = _mm256_mul_ps(_mm256_mul_ps(m2c, g), _mm256_add_ps(one, _mm256_mul_ps(_mm256_mul_ps(a, g), g)));
    const __m256 e = exp8(t);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
  }
  return i;
}
#endif

}  // namespace

void swiglu_row(const float* gate, const float* up, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__)
  if (active_isa() != Isa::Scalar) i = swiglu_avx2(gate, up, y, n);
#endif
  for (; i < n; ++i) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void geglu_row(const float* gate, const float* up, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__)
  if (active_isa() != Isa::Scalar) i = geglu_avx2(gate, up, y, n);
#endif
  for (; i < n; ++i) {
    const float g = gate[i];
    y[i] = g / (1.0f + std::exp(-2.0f * kSqrt2OverPi * g * (1.0f + kGeluCoefA * g * g))) * up[i];
  }
}

void glu_row(graph::Activation act, const float* gate, const float* up, float* y, int64_t n) {
  if (act == graph::Activation::GeluTanh)
    geglu_row(gate, up, y, n);
  else
    swiglu_row(gate, up, y, n);
}

void rope_row(const float* x, float* y, int n_head, int head_dim, const graph::RopeParams& rope, int32_t pos,
              const float* freq_factors) {
  const int n_rot = rope.n_rot;
  // As ggml: theta_i = pos * scale * base^(-2i/n_rot), by repeated multiplication in float.
  const float theta_scale = std::pow(rope.freq_base, -2.0f / static_cast<float>(n_rot));
  float cos_cache[512], sin_cache[512];  // n_rot <= 1024 (checked at load)
  float theta = static_cast<float>(pos);
  for (int i = 0; i < n_rot / 2; ++i) {
    const float ff = freq_factors ? freq_factors[i] : 1.0f;
    const float t = rope.freq_scale * (theta / ff);
    cos_cache[i] = std::cos(t);
    sin_cache[i] = std::sin(t);
    theta *= theta_scale;
  }
  for (int h = 0; h < n_head; ++h) {
    const float* xh = x + static_cast<int64_t>(h) * head_dim;
    float* yh = y + static_cast<int64_t>(h) * head_dim;
    if (rope.type == graph::RopeType::Normal) {
      for (int i = 0; i < n_rot / 2; ++i) {
        const float x0 = xh[2 * i], x1 = xh[2 * i + 1];
        yh[2 * i] = x0 * cos_cache[i] - x1 * sin_cache[i];
        yh[2 * i + 1] = x0 * sin_cache[i] + x1 * cos_cache[i];
      }
    } else {
      const int half = n_rot / 2;
      for (int i = 0; i < half; ++i) {
        const float x0 = xh[i], x1 = xh[i + half];
        yh[i] = x0 * cos_cache[i] - x1 * sin_cache[i];
        yh[i + half] = x0 * sin_cache[i] + x1 * cos_cache[i];
      }
    }
    for (int i = n_rot; i < head_dim; ++i) yh[i] = xh[i];
  }
}

float attention_scale(const graph::Node& n) {
  return n.scale != 0.0f ? n.scale : 1.0f / std::sqrt(static_cast<float>(n.head_dim));
}

int32_t first_visible(int window, int32_t pos) { return window > 0 ? std::max(0, pos - window + 1) : 0; }

void attention_head(const KvCache& cache, int layer, int kv_head, int head_dim, float scale, const float* q,
                    int32_t first, int32_t pos, const int64_t* rows, float* scores, float* out) {
  const bool f16 = cache.config().type == graph::KvType::F16;
  const int64_t offset = static_cast<int64_t>(kv_head) * head_dim;
  float max_score = -INFINITY;
  for (int32_t j = first; j <= pos; ++j) {
    const void* k = cache.key_row(layer, rows[j]);
    const float s = (f16 ? dot_f32_f16(q, static_cast<const uint16_t*>(k) + offset, head_dim)
                         : dot_f32(q, static_cast<const float*>(k) + offset, head_dim)) * scale;
    scores[j] = s;
    max_score = std::max(max_score, s);
  }
  double sum = 0.0;
  for (int32_t j = first; j <= pos; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    sum += scores[j];
  }
  const float inv = static_cast<float>(1.0 / sum);
  std::memset(out, 0, sizeof(float) * head_dim);
  for (int32_t j = first; j <= pos; ++j) {
    const void* v = cache.value_row(layer, rows[j]);
    if (f16)
      axpy_f16(scores[j] * inv, static_cast<const uint16_t*>(v) + offset, out, head_dim);
    else
      axpy_f32(scores[j] * inv, static_cast<const float*>(v) + offset, out, head_dim);
  }
}

}  // namespace rayo::cpu
