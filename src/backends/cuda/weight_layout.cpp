#include "backends/cuda/weight_layout.h"

#include <cstring>

#include "common/error.h"

namespace rayo::cuda {
namespace {

// (first byte, bytes) of each plane of a block, as in weight_layout.h's table.
std::vector<std::pair<int, int>> plane_ranges(TensorType type) {
  switch (type) {
    case TensorType::Q4_0: return {{2, 16}, {0, 2}};
    case TensorType::Q4_1: return {{4, 16}, {0, 4}};
    case TensorType::Q5_0: return {{6, 16}, {2, 4}, {0, 2}};
    case TensorType::Q5_1: return {{8, 16}, {4, 4}, {0, 4}};
    case TensorType::Q8_0: return {{2, 32}, {0, 2}};
    case TensorType::Q2_K: return {{0, 80}, {80, 4}};
    case TensorType::Q3_K: return {{0, 96}, {96, 12}, {108, 2}};
    case TensorType::Q4_K: return {{0, 144}};
    case TensorType::Q5_K: return {{0, 176}};
    case TensorType::Q6_K: return {{0, 208}, {208, 2}};
    case TensorType::IQ4_NL: return {{2, 16}, {0, 2}};
    case TensorType::IQ4_XS: return {{8, 128}, {0, 8}};
    default: return {};
  }
}

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

bool has_gpu_layout(TensorType type) { return !plane_ranges(type).empty(); }

WeightLayout gpu_layout(TensorType type, int64_t rows, int64_t cols) {
  const auto& ti = info(type);
  RAYO_CHECK(rows > 0 && cols > 0 && cols % ti.block_size == 0, "a ", rows, " x ", cols, " ", type_name(type),
             " matrix does not split into whole blocks");
  WeightLayout l;
  l.type = type;
  l.rows = rows;
  l.cols = cols;
  auto ranges = plane_ranges(type);
  if (ranges.empty()) ranges = {{0, static_cast<int>(ti.block_bytes)}};
  const int64_t blocks = rows * (cols / ti.block_size);
  size_t offset = 0;
  for (auto [first, bytes] : ranges) {
    offset = round_up(offset, kPlaneAlignment);
    l.planes.push_back(WeightPlane{first, bytes, offset});
    offset += static_cast<size_t>(blocks) * bytes;
  }
  // The f16 GEMMs copy a plane of 2-byte fields in whole aligned 4-byte words
  // (gemm.cuh), which may reach 2 bytes past the last block.
  l.bytes = round_up(offset, 16);
  return l;
}

int64_t blocks_per_row(const WeightLayout& layout) { return layout.cols / info(layout.type).block_size; }

void split_rows(const WeightLayout& layout, const void* src, int64_t n, uint8_t* dst) {
  const int64_t blocks = n * blocks_per_row(layout);
  const size_t block_bytes = info(layout.type).block_bytes;
  const auto* in = static_cast<const uint8_t*>(src);
  if (!layout.repacked()) {
    std::memcpy(dst, in, static_cast<size_t>(blocks) * block_bytes);
    return;
  }
  for (const WeightPlane& p : layout.planes) {
    for (int64_t b = 0; b < blocks; ++b) std::memcpy(dst + b * p.bytes, in + b * block_bytes + p.block_offset, p.bytes);
    dst += static_cast<size_t>(blocks) * p.bytes;
  }
}

size_t plane_row_offset(const WeightLayout& layout, int p, int64_t row) {
  const WeightPlane& plane = layout.planes.at(static_cast<size_t>(p));
  return plane.offset + static_cast<size_t>(row * blocks_per_row(layout)) * plane.bytes;
}

}  // namespace rayo::cuda
