#include "backends/cuda/driver_api.h"

#include <dlfcn.h>

#include <type_traits>

#include "backends/cuda/nvrtc.h"
#include "common/error.h"

namespace rayo::cuda {

Driver& Driver::get() {
  static Driver instance;
  return instance;
}

Driver::Driver() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) h = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    reason_ = "no CUDA driver (libcuda.so.1 not found)";
    return;
  }
  bool missing = false;
  std::string missing_name;
  auto load = [&](auto& fn, const char* name, const char* versioned = nullptr) {
    void* p = versioned ? dlsym(h, versioned) : nullptr;
    if (!p) p = dlsym(h, name);
    if (!p && !missing) {
      missing = true;
      missing_name = name;
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  // The _v2 entry points are the 64-bit ones cuda.h maps the plain names to.
  load(api_.cuInit, "cuInit");
  load(api_.cuDriverGetVersion, "cuDriverGetVersion");
  load(api_.cuDeviceGetCount, "cuDeviceGetCount");
  load(api_.cuDeviceGet, "cuDeviceGet");
  load(api_.cuDeviceGetName, "cuDeviceGetName");
  load(api_.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  load(api_.cuDeviceTotalMem, "cuDeviceTotalMem", "cuDeviceTotalMem_v2");
  load(api_.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  load(api_.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2");
  load(api_.cuCtxSetCurrent, "cuCtxSetCurrent");
  load(api_.cuCtxSynchronize, "cuCtxSynchronize");
  load(api_.cuMemGetInfo, "cuMemGetInfo", "cuMemGetInfo_v2");
  load(api_.cuModuleLoadData, "cuModuleLoadData");
  load(api_.cuModuleUnload, "cuModuleUnload");
  load(api_.cuModuleGetFunction, "cuModuleGetFunction");
  load(api_.cuFuncSetAttribute, "cuFuncSetAttribute");
  load(api_.cuLaunchKernel, "cuLaunchKernel");
  load(api_.cuMemAlloc, "cuMemAlloc", "cuMemAlloc_v2");
  load(api_.cuMemFree, "cuMemFree", "cuMemFree_v2");
  load(api_.cuMemAllocHost, "cuMemAllocHost", "cuMemAllocHost_v2");
  load(api_.cuMemFreeHost, "cuMemFreeHost");
  load(api_.cuMemcpyHtoD, "cuMemcpyHtoD", "cuMemcpyHtoD_v2");
  load(api_.cuMemcpyDtoH, "cuMemcpyDtoH", "cuMemcpyDtoH_v2");
  load(api_.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2");
  load(api_.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2");
  load(api_.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2");
  load(api_.cuMemsetD8, "cuMemsetD8", "cuMemsetD8_v2");
  load(api_.cuStreamCreate, "cuStreamCreate");
  load(api_.cuStreamDestroy, "cuStreamDestroy", "cuStreamDestroy_v2");
  load(api_.cuStreamSynchronize, "cuStreamSynchronize");
  load(api_.cuEventCreate, "cuEventCreate");
  load(api_.cuEventDestroy, "cuEventDestroy", "cuEventDestroy_v2");
  load(api_.cuEventRecord, "cuEventRecord");
  load(api_.cuEventSynchronize, "cuEventSynchronize");
  load(api_.cuEventElapsedTime, "cuEventElapsedTime");
  load(api_.cuStreamBeginCapture, "cuStreamBeginCapture", "cuStreamBeginCapture_v2");
  load(api_.cuStreamEndCapture, "cuStreamEndCapture");
  // cuGraphInstantiate's current ABI (flags) is cuGraphInstantiateWithFlags.
  load(api_.cuGraphInstantiate, "cuGraphInstantiateWithFlags");
  load(api_.cuGraphLaunch, "cuGraphLaunch");
  load(api_.cuGraphExecDestroy, "cuGraphExecDestroy");
  load(api_.cuGraphDestroy, "cuGraphDestroy");
  load(api_.cuGetErrorString, "cuGetErrorString");
  load(api_.cuGetErrorName, "cuGetErrorName");
  if (missing) {
    reason_ = cat("the CUDA driver is too old (libcuda.so.1 lacks ", missing_name, ")");
    return;
  }
  // Optional: programmatic dependent launch (sm_90) needs it; older drivers launch without.
  api_.cuLaunchKernelEx = reinterpret_cast<decltype(api_.cuLaunchKernelEx)>(dlsym(h, "cuLaunchKernelEx"));
  CUresult r = api_.cuInit(0);
  if (r != 0) {
    reason_ = cat("the CUDA driver failed to initialise: ", error_text(r));
    return;
  }
  api_.cuDriverGetVersion(&version_);
  r = api_.cuDeviceGetCount(&device_count_);
  if (r != 0 || device_count_ == 0) {
    reason_ = "no CUDA device found";
    return;
  }
  available_ = true;
}

void Driver::override_for_testing(const DriverApi* api, int version) {
  if (api) {
    if (!saved_) saved_ = std::make_unique<Saved>(Saved{available_, reason_, version_, device_count_, api_});
    api_ = *api;
    available_ = true;
    reason_.clear();
    version_ = version;
    device_count_ = 1;
  } else if (saved_) {
    available_ = saved_->available;
    reason_ = saved_->reason;
    version_ = saved_->version;
    device_count_ = saved_->device_count;
    api_ = saved_->api;
    saved_.reset();
  }
}

std::string Driver::error_text(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_.cuGetErrorName) api_.cuGetErrorName(r, &name);
  if (api_.cuGetErrorString) api_.cuGetErrorString(r, &text);
  return cat(name ? name : "CUDA error", " ", r, ": ", text ? text : "unknown");
}

void check(CUresult r, const char* what) {
  if (r != 0) fail("CUDA: ", what, ": ", Driver::get().error_text(r));
}

bool cuda_available() { return Driver::get().is_available() && Nvrtc::get().is_available(); }

std::string cuda_unavailable_reason() {
  if (!Driver::get().is_available()) return Driver::get().unavailable_reason();
  if (!Nvrtc::get().is_available()) return Nvrtc::get().unavailable_reason();
  return "";
}

}  // namespace rayo::cuda
