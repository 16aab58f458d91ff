#pragma once
// The CUDA driver API (libcuda.so.1), loaded with dlopen at first use. Only the
// functions rayo needs are declared, with opaque handles and int enums, so that
// the project builds with g++ alone and a binary built without a GPU runs on one.
// When the library or a device is missing, is_available() is false and
// unavailable_reason() says why in one line; callers then use the CPU.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace rayo::cuda {

using CUresult = int;  // 0 = CUDA_SUCCESS
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;

// Device attributes rayo queries (values of CUdevice_attribute).
constexpr int CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13;  // kHz
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
constexpr int CU_STREAM_NON_BLOCKING = 1;
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
constexpr int CU_EVENT_DEFAULT = 0;
// Function attributes rayo sets (values of CUfunction_attribute).
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
// Launch attributes (CUlaunchAttributeID).
constexpr int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;

// cuLaunchKernelEx's configuration, laid out as cuda.h's CUlaunchAttribute and
// CUlaunchConfig (the value is a 64-byte union; rayo sets its first int).
struct CuLaunchAttribute {
  int id = 0;
  char pad[4] = {};
  union alignas(8) {
    char bytes[64];
    int value;
  } value = {};
};
static_assert(sizeof(CuLaunchAttribute) == 72, "cuda.h's CUlaunchAttribute");
struct CuLaunchConfig {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1, block_y = 1, block_z = 1;
  unsigned shared_bytes = 0;
  CUstream stream = nullptr;
  CuLaunchAttribute* attrs = nullptr;
  unsigned n_attrs = 0;
};
static_assert(sizeof(CuLaunchConfig) == 56, "cuda.h's CUlaunchConfig");

struct DriverApi {
  CUresult (*cuInit)(unsigned flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int* version) = nullptr;
  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* dev, int ordinal) = nullptr;
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice dev) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int* value, int attrib, CUdevice dev) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice dev) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* ctx, CUdevice dev) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext ctx) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemGetInfo)(size_t* free, size_t* total) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction* fn, CUmodule module, const char* name) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction fn, int attrib, int value) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shared_bytes, CUstream stream, void** params,
                             void** extra) = nullptr;
  // CUDA 12.0 drivers and later; null on older ones (launches then use cuLaunchKernel).
  CUresult (*cuLaunchKernelEx)(const CuLaunchConfig* config, CUfunction f, void** params, void** extra) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr* ptr, size_t bytes) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr ptr) = nullptr;
  CUresult (*cuMemAllocHost)(void** ptr, size_t bytes) = nullptr;
  CUresult (*cuMemFreeHost)(void* ptr) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void* src, size_t bytes) = nullptr;
  CUresult (*cuMemcpyDtoH)(void* dst, CUdeviceptr src, size_t bytes) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes, CUstream s) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes, CUstream s) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) = nullptr;
  CUresult (*cuMemsetD8)(CUdeviceptr dst, unsigned char value, size_t n) = nullptr;
  CUresult (*cuStreamCreate)(CUstream* s, unsigned flags) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream s) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream s) = nullptr;
  CUresult (*cuEventCreate)(CUevent* e, unsigned flags) = nullptr;
  CUresult (*cuEventDestroy)(CUevent e) = nullptr;
  CUresult (*cuEventRecord)(CUevent e, CUstream s) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent e) = nullptr;
  CUresult (*cuEventElapsedTime)(float* ms, CUevent start, CUevent end) = nullptr;
  CUresult (*cuStreamBeginCapture)(CUstream s, int mode) = nullptr;
  CUresult (*cuStreamEndCapture)(CUstream s, CUgraph* graph) = nullptr;
  CUresult (*cuGraphInstantiate)(CUgraphExec* exec, CUgraph graph, unsigned long long flags) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream s) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph graph) = nullptr;
  CUresult (*cuGetErrorString)(CUresult error, const char** str) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char** str) = nullptr;
};

class Driver {
 public:
  // The process-wide instance: loads libcuda.so.1 and calls cuInit(0) once; never throws.
  static Driver& get();

  bool is_available() const { return available_; }
  const std::string& unavailable_reason() const { return reason_; }
  int version() const { return version_; }  // e.g. 12040; 0 when unavailable
  int device_count() const { return device_count_; }
  const DriverApi& api() const { return api_; }

  // "CUDA_ERROR_OUT_OF_MEMORY: out of memory".
  std::string error_text(CUresult r) const;

  // Tests only: replaces the loaded driver by `api` (an emulated GPU: the SIMT
  // emulator behind the same entry points), or restores it when api is null.
  void override_for_testing(const DriverApi* api, int version = 12000);

 private:
  Driver();
  struct Saved {
    bool available;
    std::string reason;
    int version, device_count;
    DriverApi api;
  };
  std::unique_ptr<Saved> saved_;
  bool available_ = false;
  std::string reason_;
  int version_ = 0;
  int device_count_ = 0;
  DriverApi api_;
};

// Throws rayo::Error "CUDA: <what>: <error text>" unless r is success.
void check(CUresult r, const char* what);

// A usable GPU and NVRTC: the condition for the CUDA backend.
bool cuda_available();
// Why not, in one line ("" when available).
std::string cuda_unavailable_reason();

}  // namespace rayo::cuda
