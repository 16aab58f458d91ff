#pragma once
// For tests that run kernels natively: a device, a kernel cache whose variants
// load as modules, typed copies and a synchronous launch.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/driver_api.h"
#include "backends/cuda/kernel_cache.h"
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
  // Launches `entry` of the variant with the kernel arguments `args` (device
  // pointers and integers, 8 bytes each) and waits for it.
  void run(const cuda::KernelSpec& spec, const char* entry, unsigned gx, unsigned gy, unsigned gz, unsigned block,
           std::vector<uint64_t> args) {
    const cuda::CUfunction f = cuda::kernel_function(cache.get(spec), spec, entry);
    std::vector<void*> params;
    for (auto& a : args) params.push_back(&a);
    ctx.launch(f, gx, gy, gz, block, params.data(), spec.dynamic_shared);
    ctx.synchronize();
  }
};

}  // namespace rayo::test
