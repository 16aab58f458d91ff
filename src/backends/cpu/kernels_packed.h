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

// AVX-512 kernels (16 rows) where the tier is AVX-512 and one exists for the
// format (VNNI for the quantized ones); AVX2 kernels (8 rows) for every packed
// format where the tier is AVX2, or AVX-512 without its own; none on the
// scalar tier.
PackedKernel packed_kernel(Isa isa, TensorType type);

// Per instruction set (kernels_packed_avx2.cpp, kernels_packed_avx512.cpp):
// null where that set has no kernel for the format.
TileKernel packed_kernel_avx2(TensorType type);
TileKernel packed_kernel_avx512(TensorType type);
// F16 and BF16 (kernels_packed_half.cpp): 16 rows a group on AVX-512, 8 on AVX2.
TileKernel packed_half_kernel_avx2(TensorType type);
TileKernel packed_half_kernel_avx512(TensorType type);

}  // namespace rayo::cpu::detail
