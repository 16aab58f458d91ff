#pragma once
// Tensor element types with ggml's numeric ids (as stored in GGUF files) and
// their block geometry. A quantized type stores `block_size` consecutive
// values of a row in `block_bytes` bytes; rows are always whole blocks.
#include <cstdint>
#include <optional>
#include <string_view>

namespace rayo {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct TensorTypeInfo {
  TensorType type;
  std::string_view name;  // ggml's name: "q4_K", "f16", ...
  uint32_t block_size;    // values per block
  uint32_t block_bytes;   // bytes per block
  bool quantized;
  bool decodes = false;   // quant/dequantize.h turns its blocks into floats
  bool encodes = false;   // quant/quantize.h writes them (llama.cpp's reference quantizer)
};

// Geometry of a type id found in a file, or nullopt for an id rayo does not know.
std::optional<TensorTypeInfo> tensor_type_info(uint32_t id);
// Same for a known enum value (always succeeds).
const TensorTypeInfo& info(TensorType type);

// ggml's display name ("Q4_K", "F16"): upper-case, as llama.cpp prints it.
std::string_view type_name(TensorType type);
// Parses "q4_k", "Q4_K", "f16", ... (case-insensitive). nullopt if unknown.
std::optional<TensorType> parse_tensor_type(std::string_view name);

// Bytes of a row of n values; n must be a multiple of the block size.
inline uint64_t row_bytes(TensorType type, uint64_t n) {
  const auto& i = info(type);
  return n / i.block_size * i.block_bytes;
}

}  // namespace rayo
