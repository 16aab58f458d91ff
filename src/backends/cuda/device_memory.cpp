#include "backends/cuda/device_memory.h"

#include <algorithm>

#include "common/error.h"

namespace rayo::cuda {

DeviceBuffer::DeviceBuffer(DeviceContext* ctx, size_t bytes) : ctx_(ctx), bytes_(bytes) {
  if (bytes == 0) return;
  const CUresult r = ctx->api().cuMemAlloc(&ptr_, bytes);
  if (r != 0) fail("CUDA: cannot allocate ", format_bytes(bytes), " on the GPU: ", Driver::get().error_text(r));
  ctx->stats().allocations++;
  ctx->stats().allocated_bytes += bytes;
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    ctx_ = o.ctx_;
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::release() {
  if (ptr_ && ctx_) ctx_->api().cuMemFree(ptr_);
  ptr_ = 0;
}

double measure_copy_bandwidth(DeviceContext& ctx) {
  const auto& a = ctx.api();
  size_t free_bytes = 0, total_bytes = 0;
  check(a.cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo");
  const size_t bytes = std::max<size_t>(size_t{1} << 20, std::min<size_t>(size_t{1} << 30, free_bytes / 8) / 4096 * 4096);
  DeviceBuffer src = ctx.alloc(bytes), dst = ctx.alloc(bytes);
  struct Events {
    const DriverApi& a;
    CUevent start = nullptr, stop = nullptr;
    ~Events() {
      if (start) a.cuEventDestroy(start);
      if (stop) a.cuEventDestroy(stop);
    }
  } ev{a};
  check(a.cuEventCreate(&ev.start, 0), "cuEventCreate");
  check(a.cuEventCreate(&ev.stop, 0), "cuEventCreate");
  double best = 0;
  for (int i = 0; i < 4; ++i) {  // the first copy is a warm-up
    check(a.cuEventRecord(ev.start, ctx.stream()), "cuEventRecord");
    check(a.cuMemcpyDtoDAsync(dst.ptr(), src.ptr(), bytes, ctx.stream()), "copy on the GPU");
    check(a.cuEventRecord(ev.stop, ctx.stream()), "cuEventRecord");
    check(a.cuEventSynchronize(ev.stop), "cuEventSynchronize");
    float ms = 0;
    check(a.cuEventElapsedTime(&ms, ev.start, ev.stop), "cuEventElapsedTime");
    if (i > 0 && ms > 0) best = std::max(best, 2.0 * static_cast<double>(bytes) / (ms * 1e-3));
  }
  return best;
}

DeviceContext::DeviceContext(int ordinal) {
  Driver& d = Driver::get();
  if (!d.is_available()) fail(d.unavailable_reason());
  const auto& a = d.api();
  if (ordinal < 0 || ordinal >= d.device_count())
    fail("CUDA device ", ordinal, " does not exist (", d.device_count(), " found)");
  check(a.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  char name[256] = {};
  check(a.cuDeviceGetName(name, sizeof name - 1, device_), "cuDeviceGetName");
  name_ = name;
  check(a.cuDeviceGetAttribute(&cc_major_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_), "compute capability");
  check(a.cuDeviceGetAttribute(&cc_minor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_), "compute capability");
  check(a.cuDeviceTotalMem(&total_mem_, device_), "cuDeviceTotalMem");
  check(a.cuDeviceGetAttribute(&sm_count_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_), "SM count");
  check(a.cuDeviceGetAttribute(&clock_khz_, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, device_), "clock rate");
  check(a.cuDeviceGetAttribute(&max_shared_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device_),
        "shared memory per block");
  check(a.cuDevicePrimaryCtxRetain(&ctx_, device_), "cuDevicePrimaryCtxRetain");
  check(a.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
  check(a.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

void DeviceContext::make_current() const { check(api().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent"); }

DeviceContext::~DeviceContext() {
  const auto& a = api();
  a.cuCtxSetCurrent(ctx_);
  if (stream_) a.cuStreamDestroy(stream_);
  if (ctx_) a.cuDevicePrimaryCtxRelease(device_);
}

void DeviceContext::upload(CUdeviceptr dst, const void* src, size_t bytes) {
  check(api().cuMemcpyHtoD(dst, src, bytes), "copy to the GPU");
  stats_.h2d++;
  stats_.h2d_bytes += bytes;
}

void DeviceContext::upload_async(CUdeviceptr dst, const void* src, size_t bytes) {
  check(api().cuMemcpyHtoDAsync(dst, src, bytes, stream_), "copy to the GPU");
  stats_.h2d++;
  stats_.h2d_bytes += bytes;
}

void DeviceContext::download_async(void* dst, CUdeviceptr src, size_t bytes) {
  check(api().cuMemcpyDtoHAsync(dst, src, bytes, stream_), "copy from the GPU");
  stats_.d2h++;
  stats_.d2h_bytes += bytes;
}

void DeviceContext::synchronize() { check(api().cuStreamSynchronize(stream_), "stream synchronize"); }

void DeviceContext::launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, void** params,
                           unsigned shared_bytes) {
  if (programmatic_launch_) {
    CuLaunchAttribute serialization;
    serialization.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    serialization.value.value = 1;
    CuLaunchConfig config;
    config.grid_x = gx, config.grid_y = gy, config.grid_z = gz;
    config.block_x = bx;
    config.shared_bytes = shared_bytes;
    config.stream = stream_;
    config.attrs = &serialization;
    config.n_attrs = 1;
    check(api().cuLaunchKernelEx(&config, f, params, nullptr), "kernel launch");
  } else {
    check(api().cuLaunchKernel(f, gx, gy, gz, bx, 1, 1, shared_bytes, stream_, params, nullptr), "kernel launch");
  }
  stats_.kernel_launches++;
}

bool DeviceContext::set_programmatic_launch(bool on) {
  programmatic_launch_ = on && compute_capability() >= 90 && api().cuLaunchKernelEx != nullptr;
  return programmatic_launch_;
}

void DeviceContext::launch_graph(CUgraphExec exec) {
  check(api().cuGraphLaunch(exec, stream_), "graph launch");
  stats_.graph_launches++;
}

void* DeviceContext::alloc_host(size_t bytes) {
  void* p = nullptr;
  check(api().cuMemAllocHost(&p, bytes), "pinned host allocation");
  return p;
}

void DeviceContext::free_host(void* p) {
  if (p) api().cuMemFreeHost(p);
}

}  // namespace rayo::cuda
