#pragma once
// Kernel sources from src/backends/cuda/kernels, embedded into the binary at build
// time (cmake/EmbedKernels.cmake) so NVRTC can compile them without the source tree.
#include <string_view>
#include <vector>

namespace rayo::cuda {

struct EmbeddedKernelSource {
  std::string_view file_name;  // e.g. "rmsnorm.cu"
  const char* source;          // NUL-terminated CUDA C++ source
};

const std::vector<EmbeddedKernelSource>& embedded_kernel_sources();

}  // namespace rayo::cuda
