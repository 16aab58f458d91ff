#pragma once
// Weights repacked at load into row-interleaved layouts for the SIMD kernels.
// (Layouts are documented in kernels_packed.cpp next to the kernels.)
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cpu/huge_pages.h"
#include "backends/cpu/kernels.h"

namespace rayo::cpu {

struct PackedWeight {
  TensorType type;
  int64_t rows, cols;
  int64_t groups;      // ceil(rows / kPackRows) groups of interleaved rows
  size_t group_bytes;  // bytes per group
  HugePageBuffer data;  // streamed end to end by the matrix-vector kernels
};

namespace detail {

constexpr int64_t kPackRows = 16;  // rows interleaved per group: one per 32-bit lane of a zmm

bool packable(TensorType type);
std::shared_ptr<const PackedWeight> pack_weight(TensorType type, const void* data, int64_t rows, int64_t cols);
TileKernel packed_kernel(Isa isa, TensorType type);

}  // namespace detail
}  // namespace rayo::cpu
