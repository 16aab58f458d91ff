#include "quant/tensor_type.h"

#include <array>
#include <cctype>
#include <string>

#include "common/error.h"

namespace rayo {
namespace {

// Columns: type, name, block size, block bytes, quantized, and whether rayo
// decodes (dequantizes) and encodes (quantizes) it.
constexpr std::array kTypes = {
    TensorTypeInfo{TensorType::F32, "F32", 1, 4, false, true, true},
    TensorTypeInfo{TensorType::F16, "F16", 1, 2, false, true, true},
    TensorTypeInfo{TensorType::Q4_0, "Q4_0", 32, 18, true, true, true},
    TensorTypeInfo{TensorType::Q4_1, "Q4_1", 32, 20, true, true, true},
    TensorTypeInfo{TensorType::Q5_0, "Q5_0", 32, 22, true, true, true},
    TensorTypeInfo{TensorType::Q5_1, "Q5_1", 32, 24, true, true, true},
    TensorTypeInfo{TensorType::Q8_0, "Q8_0", 32, 34, true, true, true},
    TensorTypeInfo{TensorType::Q8_1, "Q8_1", 32, 36, true, true, true},
    TensorTypeInfo{TensorType::Q2_K, "Q2_K", 256, 84, true, true, true},
    TensorTypeInfo{TensorType::Q3_K, "Q3_K", 256, 110, true, true, true},
    TensorTypeInfo{TensorType::Q4_K, "Q4_K", 256, 144, true, true, true},
    TensorTypeInfo{TensorType::Q5_K, "Q5_K", 256, 176, true, true, true},
    TensorTypeInfo{TensorType::Q6_K, "Q6_K", 256, 210, true, true, true},
    TensorTypeInfo{TensorType::Q8_K, "Q8_K", 256, 292, true, true, true},
    TensorTypeInfo{TensorType::IQ2_XXS, "IQ2_XXS", 256, 66, true},
    TensorTypeInfo{TensorType::IQ2_XS, "IQ2_XS", 256, 74, true},
    TensorTypeInfo{TensorType::IQ3_XXS, "IQ3_XXS", 256, 98, true},
    TensorTypeInfo{TensorType::IQ1_S, "IQ1_S", 256, 50, true},
    TensorTypeInfo{TensorType::IQ4_NL, "IQ4_NL", 32, 18, true, true, false},
    TensorTypeInfo{TensorType::IQ3_S, "IQ3_S", 256, 110, true},
    TensorTypeInfo{TensorType::IQ2_S, "IQ2_S", 256, 82, true},
    TensorTypeInfo{TensorType::IQ4_XS, "IQ4_XS", 256, 136, true, true, false},
    TensorTypeInfo{TensorType::I8, "I8", 1, 1, false},
    TensorTypeInfo{TensorType::I16, "I16", 1, 2, false},
    TensorTypeInfo{TensorType::I32, "I32", 1, 4, false},
    TensorTypeInfo{TensorType::I64, "I64", 1, 8, false},
    TensorTypeInfo{TensorType::F64, "F64", 1, 8, false},
    TensorTypeInfo{TensorType::IQ1_M, "IQ1_M", 256, 56, true},
    TensorTypeInfo{TensorType::BF16, "BF16", 1, 2, false, true, true},
    TensorTypeInfo{TensorType::TQ1_0, "TQ1_0", 256, 54, true},
    TensorTypeInfo{TensorType::TQ2_0, "TQ2_0", 256, 66, true},
    TensorTypeInfo{TensorType::MXFP4, "MXFP4", 32, 17, true, true, false},
};

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::optional<TensorTypeInfo> tensor_type_info(uint32_t id) {
  for (const auto& t : kTypes)
    if (static_cast<uint32_t>(t.type) == id) return t;
  return std::nullopt;
}

const TensorTypeInfo& info(TensorType type) {
  for (const auto& t : kTypes)
    if (t.type == type) return t;
  fail("unknown tensor type id ", static_cast<uint32_t>(type));
}

std::string_view type_name(TensorType type) { return info(type).name; }

std::optional<TensorType> parse_tensor_type(std::string_view name) {
  const std::string u = upper(name);
  for (const auto& t : kTypes)
    if (t.name == u) return t.type;
  return std::nullopt;
}

}  // namespace rayo
