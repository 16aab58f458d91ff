#include "backends/cuda/weight_layout.h"

#include <cstring>
#include <utility>

#include "common/error.h"

namespace rayo::cuda {
namespace {

using Pieces = std::vector<BlockPiece>;

// Plane 0's pieces of a 256-value block whose 4 units' 32 bytes start at
// `first` + 32j: their first 16 bytes, then their second.
Pieces unit_halves(int first) {
  Pieces p;
  for (int half = 0; half < 2; ++half)
    for (int j = 0; j < 4; ++j) p.push_back({first + 32 * j + 16 * half, 16});
  return p;
}

// Each plane's pieces of a group of `group` blocks, as in weight_layout.h's
// table (group 2: paired Q8_0).
std::vector<Pieces> plane_pieces(TensorType type, int group) {
  switch (type) {
    case TensorType::Q4_0: return {{{2, 16}}, {{0, 2}}};
    case TensorType::Q4_1: return {{{4, 16}}, {{0, 4}}};
    case TensorType::Q5_0: return {{{6, 16}}, {{2, 4}}, {{0, 2}}};
    case TensorType::Q5_1: return {{{8, 16}}, {{4, 4}}, {{0, 4}}};
    case TensorType::Q8_0:
      if (group == 2) return {{{2, 16}, {36, 16}, {18, 16}, {52, 16}}, {{0, 2}, {34, 2}}};
      return {{{2, 32}}, {{0, 2}}};
    case TensorType::Q2_K: return {{{16, 64}}, {{0, 16}}, {{80, 4}}};
    case TensorType::Q3_K: return {{{0, 96}}, {{96, 12}}, {{108, 2}}};
    case TensorType::Q4_K: return {unit_halves(16), {{0, 16}}};
    case TensorType::Q5_K: return {unit_halves(48), {{0, 16}}, {{16, 32}}};
    case TensorType::Q6_K: {
      Pieces p0 = unit_halves(0);
      for (int first : {128, 160, 144, 176}) p0.push_back({first, 16});
      return {p0, {{192, 16}}, {{208, 2}}};
    }
    case TensorType::IQ4_NL: return {{{2, 16}}, {{0, 2}}};
    case TensorType::IQ4_XS: return {unit_halves(8), {{0, 8}}};
    default: return {};
  }
}

// Blocks laid out together: Q8_0's pairs, in rows of an even number of blocks.
int group_blocks(TensorType type, int64_t blocks_per_row) {
  return type == TensorType::Q8_0 && blocks_per_row % 2 == 0 ? 2 : 1;
}

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

bool has_gpu_layout(TensorType type) { return !plane_pieces(type, 1).empty(); }

WeightLayout gpu_layout(TensorType type, int64_t rows, int64_t cols) {
  const auto& ti = info(type);
  RAYO_CHECK(rows > 0 && cols > 0 && cols % ti.block_size == 0, "a ", rows, " x ", cols, " ", type_name(type),
             " matrix does not split into whole blocks");
  WeightLayout l;
  l.type = type;
  l.rows = rows;
  l.cols = cols;
  l.group_blocks = group_blocks(type, cols / ti.block_size);
  auto planes = plane_pieces(type, l.group_blocks);
  if (planes.empty()) planes = {{{0, static_cast<int>(ti.block_bytes)}}};
  const int64_t blocks = rows * (cols / ti.block_size);
  size_t offset = 0;
  for (auto& pieces : planes) {
    int bytes = 0;
    for (const BlockPiece& piece : pieces) bytes += piece.bytes;
    RAYO_CHECK(bytes % l.group_blocks == 0, "a plane of whole blocks");
    bytes /= l.group_blocks;
    offset = round_up(offset, kPlaneAlignment);
    l.planes.push_back(WeightPlane{std::move(pieces), bytes, offset});
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
  const int64_t groups = blocks / layout.group_blocks;
  const size_t group_bytes = block_bytes * layout.group_blocks;
  for (const WeightPlane& p : layout.planes) {
    for (int64_t g = 0; g < groups; ++g)
      for (const BlockPiece& piece : p.pieces) {
        std::memcpy(dst, in + g * group_bytes + piece.first, static_cast<size_t>(piece.bytes));
        dst += piece.bytes;
      }
  }
}

size_t plane_row_offset(const WeightLayout& layout, int p, int64_t row) {
  const WeightPlane& plane = layout.planes.at(static_cast<size_t>(p));
  return plane.offset + static_cast<size_t>(row * blocks_per_row(layout)) * plane.bytes;
}

}  // namespace rayo::cuda
