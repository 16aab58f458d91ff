#include "backends/cuda/module_set.h"

namespace rayo::cuda {

ModuleSet::ModuleSet(DeviceContext& ctx, KernelCache& cache) : ctx_(ctx) {
  cache.set_module_loader([this](const std::vector<char>& cubin) -> void* {
    CUmodule m = nullptr;
    check(ctx_.api().cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData");
    modules_.push_back(m);
    return m;
  });
}

ModuleSet::~ModuleSet() {
  for (CUmodule m : modules_) ctx_.api().cuModuleUnload(m);
}

}  // namespace rayo::cuda
