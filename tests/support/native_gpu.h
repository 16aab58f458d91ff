#pragma once
// For tests that run kernels natively: a device, a kernel cache whose variants
// load as modules, typed copies and a synchronous launch.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/driver_api.h"
#include "backends/cuda/kernel_args.h"
#include "backends/cuda/kernel_cache.h"
#include "backends/cuda/kernel_specs.h"
#include "backends/cuda/module_set.h"

namespace rayo::test {

struct NativeGpu {
  cuda::DeviceContext ctx{0};
  cuda::KernelCache cache{ctx.arch(), cuda::Driver::get().version()};
  cuda::ModuleSet modules{ctx, cache};

  template <typename T>
  cuda::DeviceBuffer put(const std::vector<T>& v) {
    cuda::DeviceBuffer b = ctx.alloc(std::max<size_t>(v.size() * sizeof(T), 4));
    if (!v.empty()) ctx.upload(b.ptr(), v.data(), v.size() * sizeof(T));
    return b;
  }
  template <typename T>
  std::vector<T> get(const cuda::DeviceBuffer& b, size_t n) {
    std::vector<T> v(n);
    ctx.download_async(v.data(), b.ptr(), n * sizeof(T));
    ctx.synchronize();
    return v;
  }
  // Launches the variant's kernel as the backend does (its spec's launch for
  // a step of `token_rows` rows, its argument struct) and waits for it.
  template <typename Args>
  void run(const cuda::KernelSpec& spec, int64_t token_rows, Args args) {
    const cuda::CUfunction f = cuda::kernel_function(cache.get(spec), spec, spec.entry.c_str());
    const cuda::LaunchShape l = spec.launch(token_rows);
    void* param = &args;
    ctx.launch(f, l.grid[0], l.grid[1], l.grid[2], l.block, &param, l.shared);
    ctx.synchronize();
  }
};

}  // namespace rayo::test
