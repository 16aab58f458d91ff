#pragma once
// Host references for the quantized GEMV kernels' inputs: matrices in their GPU
// layout (backends/cuda/weight_layout.h) and the q8 twin of activations
// (kernels/q8_act.cuh), computed with the same float operations as the
// kernels, so the emulator tests can compare bytes exactly.
#include <cmath>
#include <cstdint>
#include <vector>

#include "backends/cuda/weight_layout.h"
#include "quant/tensor_type.h"

namespace rayo::test {

// A matrix of the file's bytes (rows x cols of `type`) in its GPU layout, with
// 64 bytes of slack.
inline std::vector<uint8_t> gpu_matrix(TensorType type, const std::vector<uint8_t>& file_bytes, int64_t rows,
                                       int64_t cols) {
  const auto layout = cuda::gpu_layout(type, rows, cols);
  std::vector<uint8_t> staging(layout.bytes + 64), out(layout.bytes + 64, 0xEE);
  cuda::split_rows(layout, file_bytes.data(), rows, staging.data());
  size_t at = 0;
  for (size_t p = 0; p < layout.planes.size(); ++p) {
    const size_t n = static_cast<size_t>(rows * cuda::blocks_per_row(layout)) * layout.planes[p].bytes;
    std::copy(staging.begin() + at, staging.begin() + at + n, out.begin() + cuda::plane_row_offset(layout, p, 0));
    at += n;
  }
  return out;
}

// A block's (d, s) as the kernels' float2.
struct TwinDs {
  float x, y;
};

// The q8 twin and row statistics of rows x k values (k % 32 == 0 for q and ds).
struct Q8Twin {
  std::vector<int8_t> q;
  std::vector<TwinDs> ds;
  std::vector<float> ss;
};

// As emit_block32 over every block: v = x (or x * norm_w), d = amax / 127,
// q = nearbyint(v * (127 / amax)), s = d * sum q; ss = sum of x^2 per block of 32
// (summed here in order; the kernels sum in a tree: compare ss with a tolerance).
inline Q8Twin q8_twin(const float* x, int64_t rows, int64_t k, const float* norm_w = nullptr) {
  Q8Twin t;
  const int64_t blocks = (k + 31) / 32;
  t.q.assign(static_cast<size_t>(rows * k), 0);
  t.ds.assign(static_cast<size_t>(rows * (k / 32)), TwinDs{0, 0});
  t.ss.assign(static_cast<size_t>(rows * blocks), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < blocks; ++b) {
      float amax = 0.0f, ss = 0.0f;
      float v[32];
      for (int i = 0; i < 32; ++i) {
        const int64_t c = 32 * b + i;
        const float xv = c < k ? x[r * k + c] : 0.0f;
        ss += xv * xv;
        v[i] = norm_w && c < k ? xv * norm_w[c] : xv;
        amax = std::max(amax, std::abs(v[i]));
      }
      t.ss[r * blocks + b] = ss;
      if (k % 32 != 0) continue;
      const float iscale = amax > 0.0f ? 127.0f / amax : 0.0f;
      int sum = 0;
      for (int i = 0; i < 32; ++i) {
        const int q = static_cast<int>(std::nearbyint(v[i] * iscale));
        t.q[r * k + 32 * b + i] = static_cast<int8_t>(q);
        sum += q;
      }
      const float d = amax / 127.0f;
      t.ds[r * (k / 32) + b] = TwinDs{d, d * static_cast<float>(sum)};
    }
  return t;
}

// The values the twin stands for: d * q.
inline std::vector<float> dequantized(const Q8Twin& t, int64_t rows, int64_t k) {
  std::vector<float> out(static_cast<size_t>(rows * k));
  for (int64_t i = 0; i < rows * k; ++i) out[i] = t.ds[i / 32].x * static_cast<float>(t.q[i]);
  return out;
}

// 1/rms of a row of k values from its ss blocks, in double.
inline double inv_rms(const Q8Twin& t, int64_t row, int64_t k, float eps) {
  const int64_t blocks = (k + 31) / 32;
  double s = 0;
  for (int64_t b = 0; b < blocks; ++b) s += t.ss[row * blocks + b];
  return 1.0 / std::sqrt(s / static_cast<double>(k) + eps);
}

// The values row t of a matmul over x (rows of k) sees at each column: the
// dequantized twin (quantized weights; the twin of x * norm_w when normalised)
// or x (float weights; times norm_w when normalised), times 1/rms when normalised.
inline std::vector<double> matmul_input(const std::vector<float>& x, const std::vector<float>& norm_w,
                                        const Q8Twin& twin, int64_t t, int64_t k, bool quantized, bool norm,
                                        float eps) {
  std::vector<double> v(static_cast<size_t>(k));
  const double inv = norm ? inv_rms(twin, t, k, eps) : 1.0;
  for (int64_t c = 0; c < k; ++c) {
    if (quantized)
      v[c] = static_cast<double>(twin.ds[(t * k + c) / 32].x) * twin.q[t * k + c] * inv;
    else
      v[c] = static_cast<double>(x[t * k + c]) * inv * (norm ? norm_w[c] : 1.0f);
  }
  return v;
}

}  // namespace rayo::test
