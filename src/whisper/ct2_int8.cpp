#include "whisper/ct2_int8.h"

#include <cstring>
#include <string>

#include "common/error.h"
#include "common/half.h"
#include "quant/blocks.h"

namespace rayo::whisper {
namespace {

float scale_of(const Ct2Variable& scale, int64_t row) {
  float s;
  std::memcpy(&s, scale.bytes.data() + 4 * row, 4);  // model.bin's variables need not be aligned
  return s;
}

}  // namespace

const Ct2Variable* ct2_int8_scale(const Ct2Model& model, const Ct2Variable& v) {
  if (v.type != Ct2Type::I8 || v.shape.size() < 2) return nullptr;
  const Ct2Variable* scale = model.find(v.name + "_scale");
  if (scale == nullptr)
    fail(model.path(), ": int8 variable '", v.name, "' has no '", v.name, "_scale' (CTranslate2's int8 weights have one)");
  if (scale->type != Ct2Type::F32 || scale->shape.size() != 1 || scale->shape[0] != v.shape[0])
    fail(model.path(), ": '", scale->name, "' is not one float32 for each of the ", v.shape[0], " rows of '", v.name,
         "' (rayo reads CTranslate2's int8 weights, not int16 ones)");
  return scale;
}

void ct2_int8_to_f32(const Ct2Variable& v, const Ct2Variable& scale, int64_t row0, int64_t rows, float* out) {
  const int64_t cols = static_cast<int64_t>(v.elements() / v.shape[0]);
  RAYO_CHECK(row0 >= 0 && row0 + rows <= static_cast<int64_t>(v.shape[0]), v.name);
  const auto* q = reinterpret_cast<const int8_t*>(v.bytes.data());
  for (int64_t r = row0; r < row0 + rows; ++r) {
    const float s = scale_of(scale, r);
    for (int64_t c = 0; c < cols; ++c) *out++ = static_cast<float>(q[r * cols + c]) / s;
  }
}

void ct2_int8_to_q8_0(const Ct2Variable& v, const Ct2Variable& scale, std::byte* out) {
  const int64_t rows = v.shape[0];
  const int64_t cols = static_cast<int64_t>(v.elements() / rows);
  RAYO_CHECK(cols % quant::QK8_0 == 0, v.name, ": ", cols, " columns");
  const auto* q = reinterpret_cast<const int8_t*>(v.bytes.data());
  auto* blocks = reinterpret_cast<quant::BlockQ8_0*>(out);
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t d = fp32_to_fp16(1.0f / scale_of(scale, r));
    for (int64_t b = 0; b < cols / quant::QK8_0; ++b, ++blocks) {
      blocks->d = d;
      std::memcpy(blocks->qs, q + r * cols + b * quant::QK8_0, quant::QK8_0);
    }
  }
}

}  // namespace rayo::whisper
