#include "backends/cpu/kernels_packed.h"

namespace rayo::cpu::detail {

bool packable(TensorType) { return false; }
std::shared_ptr<const PackedWeight> pack_weight(TensorType, const void*, int64_t, int64_t) { return nullptr; }
TileKernel packed_kernel(Isa, TensorType) { return nullptr; }

}  // namespace rayo::cpu::detail
