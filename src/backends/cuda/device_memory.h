#pragma once
// Device memory with accounting: every allocation, host->device and
// device->host copy and kernel launch goes through a DeviceContext, which
// counts them (and their bytes) so that tests can pin the traffic of a decode
// step: one small upload (token ids, positions), one graph launch, one small
// download (logits or sampled ids).
#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/cuda/driver_api.h"
#include "common/strings.h"

namespace rayo::cuda {

struct TransferStats {
  uint64_t h2d = 0, h2d_bytes = 0;
  uint64_t d2h = 0, d2h_bytes = 0;
  uint64_t kernel_launches = 0;  // cuLaunchKernel calls (inside a capture: recorded once)
  uint64_t graph_launches = 0;   // cuGraphLaunch calls (one per captured step)
  uint64_t allocations = 0, allocated_bytes = 0;
};

class DeviceContext;

// An owned device allocation (moves, never copies).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceContext* ctx, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  explicit operator bool() const { return ptr_ != 0; }

 private:
  void release();
  DeviceContext* ctx_ = nullptr;
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

// The device, its primary context and one stream, with the counters.
class DeviceContext {
 public:
  explicit DeviceContext(int ordinal);
  ~DeviceContext();

  const std::string& name() const { return name_; }
  int compute_capability() const { return cc_major_ * 10 + cc_minor_; }
  std::string arch() const { return cat("sm_", compute_capability()); }
  size_t total_memory() const { return total_mem_; }
  int sm_count() const { return sm_count_; }
  int clock_khz() const { return clock_khz_; }  // the SMs' peak clock
  int max_shared_per_block() const { return max_shared_; }  // bytes a kernel may opt in to
  CUstream stream() const { return stream_; }
  const DriverApi& api() const { return Driver::get().api(); }
  // Makes the context current on the calling thread. A context is current per
  // thread: the backend is made on one thread and, in rayo serve, stepped on
  // the scheduler's, where without this every call fails with
  // CUDA_ERROR_INVALID_CONTEXT (seen on an H200). Cheap: call it at every
  // entry point.
  void make_current() const;

  DeviceBuffer alloc(size_t bytes) { return DeviceBuffer(this, bytes); }
  // Synchronous copies (weights at load) and stream-ordered ones (per step, from pinned memory).
  void upload(CUdeviceptr dst, const void* src, size_t bytes);
  void upload_async(CUdeviceptr dst, const void* src, size_t bytes);
  void download_async(void* dst, CUdeviceptr src, size_t bytes);
  void synchronize();
  // shared_bytes: the kernel's dynamic shared memory (kernel_function allows it).
  void launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, void** params,
              unsigned shared_bytes = 0);
  // Launches from now on with programmatic stream serialization (programmatic
  // dependent launch), where the device (sm_90+) and driver (cuLaunchKernelEx)
  // have it: every kernel launched must then call grid_dependency_wait()
  // (kernels/common.cuh) first, as rayo's kernels do. Returns whether it is on.
  bool set_programmatic_launch(bool on);
  bool programmatic_launch() const { return programmatic_launch_; }
  void launch_graph(CUgraphExec exec);

  // Page-locked host memory for the per-step copies.
  void* alloc_host(size_t bytes);
  void free_host(void* p);

  TransferStats& stats() { return stats_; }
  const TransferStats& stats() const { return stats_; }

 private:
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  std::string name_;
  int cc_major_ = 0, cc_minor_ = 0, sm_count_ = 0, clock_khz_ = 0, max_shared_ = 0;
  size_t total_mem_ = 0;
  bool programmatic_launch_ = false;
  TransferStats stats_;
};

// Bytes per second a device-to-device copy moves on ctx's stream, counting
// the bytes read and the bytes written: the memory roofline `rayo bench`
// compares a decode step with. The best of 3 timed copies (after a warm-up)
// of a buffer of min(1 GiB, free memory / 8).
double measure_copy_bandwidth(DeviceContext& ctx);

}  // namespace rayo::cuda
