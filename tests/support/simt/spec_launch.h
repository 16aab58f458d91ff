#pragma once
// Runs a kernel on the SIMT emulator as the backend launches it: with the
// grid, block and dynamic shared memory its spec gives (kernel_specs.h) for a
// step of `token_rows` rows, and its argument struct (kernel_args.cuh).
#include <cstdint>

#include "backends/cuda/kernel_specs.h"
#include "support/simt/simt.h"

namespace rayo::test {

template <typename Args>
void launch(const cuda::KernelSpec& spec, int64_t token_rows, void (*kernel)(Args), const Args& args) {
  const cuda::LaunchShape l = spec.launch(token_rows);
  simt::launch(simt::dim3(l.grid[0], l.grid[1], l.grid[2]), simt::dim3(l.block), [&] { kernel(args); }, l.shared);
}

}  // namespace rayo::test
