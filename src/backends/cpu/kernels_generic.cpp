// Instantiates the portable kernels of kernels_generic.inl for each instruction
// set (see there).
#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_decode.h"

// GCC 12 flags the deliberately undefined registers inside its AVX-512
// intrinsic headers (-Wuninitialized false positives); silence just that.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace rayo::cpu::detail {

namespace generic_scalar {
#include "backends/cpu/kernels_generic.inl"
}  // namespace generic_scalar

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace generic_avx2 {
#include "backends/cpu/kernels_generic.inl"
}  // namespace generic_avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
namespace generic_avx512 {
#include "backends/cpu/kernels_generic.inl"
}  // namespace generic_avx512
#pragma GCC pop_options
#endif

size_t generic_scratch_bytes(int64_t cols) {
  return static_cast<size_t>(((cols + 63) & ~int64_t{63}) + 2 * (cols / 16) * sizeof(float) + 64);
}

TileKernel generic_quant_kernel(Isa isa, TensorType type) {
#if defined(__x86_64__)
  if (isa == Isa::Avx512) return generic_avx512::select_quant_tile(type);
  if (isa == Isa::Avx2) return generic_avx2::select_quant_tile(type);
#endif
  return generic_scalar::select_quant_tile(type);
}

}  // namespace rayo::cpu::detail
