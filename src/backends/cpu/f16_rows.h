#pragma once
// Vector conversions and dot products between f32 and f16 rows, used by the KV
// cache and attention. F16C/FMA when the CPU has them (checked once), else scalar.
#include <cstdint>

namespace rayo::cpu {

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n);
void f16_to_f32_row(const uint16_t* x, float* y, int64_t n);
// sum_i x[i] * y[i] with y in f16, accumulated in f32.
float dot_f32_f16(const float* x, const uint16_t* y, int64_t n);
// y[i] += a * x[i] with x in f16.
void axpy_f16(float a, const uint16_t* x, float* y, int64_t n);
float dot_f32(const float* x, const float* y, int64_t n);
void axpy_f32(float a, const float* x, float* y, int64_t n);

}  // namespace rayo::cpu
