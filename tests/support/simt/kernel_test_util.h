#pragma once
// Helpers for the emulated kernel tests: random weights in every GGUF format
// (valid blocks: finite f16 scales), reference dequantization, float64 dots.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/half.h"
#include "quant/dequantize.h"
#include "quant/tensor_type.h"

namespace rayo::test {

// Byte offsets of the f16 fields of a block of each quantized format.
inline std::vector<int> half_fields(TensorType t) {
  switch (t) {
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
    case TensorType::IQ4_NL:
    case TensorType::IQ4_XS: return {0};
    case TensorType::Q4_1:
    case TensorType::Q5_1:
    case TensorType::Q4_K:
    case TensorType::Q5_K: return {0, 2};
    case TensorType::Q2_K: return {80, 82};
    case TensorType::Q3_K: return {108};
    case TensorType::Q6_K: return {208};
    default: return {};
  }
}

// rows x cols random weights of type t: random bits everywhere, then scales
// set to small finite halves so every value is finite and of moderate size.
inline std::vector<uint8_t> random_weights(TensorType t, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const uint64_t rb = row_bytes(t, cols);
  std::vector<uint8_t> data(rb * rows + 64);  // slack: kernels may read a whole group
  if (t == TensorType::F32) {
    for (int64_t i = 0; i < rows * cols; ++i) {
      const float v = u(rng);
      std::memcpy(data.data() + 4 * i, &v, 4);
    }
    return data;
  }
  if (t == TensorType::F16 || t == TensorType::BF16) {
    for (int64_t i = 0; i < rows * cols; ++i) {
      const uint16_t h = t == TensorType::F16 ? fp32_to_fp16(u(rng)) : fp32_to_bf16(u(rng));
      std::memcpy(data.data() + 2 * i, &h, 2);
    }
    return data;
  }
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  const auto& ti = info(t);
  const int64_t blocks = rows * cols / ti.block_size;
  for (int64_t b = 0; b < blocks; ++b)
    for (int off : half_fields(t)) {
      const uint16_t h = fp32_to_fp16(0.01f + 0.05f * std::abs(u(rng)));
      std::memcpy(data.data() + b * ti.block_bytes + off, &h, 2);
    }
  return data;
}

inline std::vector<float> dequantized(TensorType t, const std::vector<uint8_t>& w, int64_t rows, int64_t cols) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  quant::dequantize_row(t, w.data(), out.data(), rows * cols);
  return out;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// Unit roundoff of float.
constexpr double kF32Eps = 1.0 / (1 << 24);

}  // namespace rayo::test
