#pragma once
// The SIMD kernels over packed (row-interleaved) weights, and which of them
// runs for a weight format on an instruction set. (Layouts: packed_layouts.h.)
#include "backends/cpu/cpu_features.h"
#include "backends/cpu/kernels.h"
#include "quant/tensor_type.h"

namespace rayo::cpu::detail {

struct PackedKernel {
  TileKernel kernel = nullptr;  // null: the format runs on the portable kernels
  int group_rows = 0;           // the layout it reads: rows interleaved per group
};

// AVX-512 VNNI kernels (16 rows) for Q8_0, Q4_K and Q6_K where the tier is
// AVX-512; AVX2 kernels (8 rows) for every packed format where the tier is
// AVX2 or AVX-512; none on the scalar tier.
PackedKernel packed_kernel(Isa isa, TensorType type);

// Per instruction set (kernels_packed_avx2.cpp, kernels_packed_avx512.cpp):
// null where that set has no kernel for the format.
TileKernel packed_kernel_avx2(TensorType type);
TileKernel packed_kernel_avx512(TensorType type);

}  // namespace rayo::cpu::detail
