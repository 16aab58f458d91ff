#include "backends/cpu/kernels_packed.h"

#include "backends/cpu/packed_layouts.h"

namespace rayo::cpu::detail {

PackedKernel packed_kernel(Isa isa, TensorType type) {
  if (!packed::has_layout(type)) return {};
  if (type == TensorType::F16 || type == TensorType::BF16) {
    if (isa == Isa::Avx512) return {packed_half_kernel_avx512(type), 16};
    if (isa == Isa::Avx2) return {packed_half_kernel_avx2(type), 8};
    return {};
  }
  if (isa == Isa::Avx512)
    if (TileKernel k = packed_kernel_avx512(type)) return {k, 16};
  if (isa == Isa::Avx2 || isa == Isa::Avx512)
    if (TileKernel k = packed_kernel_avx2(type)) return {k, 8};
  return {};
}

}  // namespace rayo::cpu::detail
