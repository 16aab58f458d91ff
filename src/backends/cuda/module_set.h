#pragma once
// The modules a KernelCache's variants are loaded into, in one context: set as
// the cache's loader, they are unloaded together when the set goes. Declare
// it after the context and the cache it serves, so that it goes first.
#include <vector>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/kernel_cache.h"

namespace rayo::cuda {

class ModuleSet {
 public:
  ModuleSet(DeviceContext& ctx, KernelCache& cache);
  ~ModuleSet();
  ModuleSet(const ModuleSet&) = delete;
  ModuleSet& operator=(const ModuleSet&) = delete;

 private:
  DeviceContext& ctx_;
  std::vector<CUmodule> modules_;
};

}  // namespace rayo::cuda
