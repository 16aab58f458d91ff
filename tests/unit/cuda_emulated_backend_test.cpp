// The real CudaBackend (weights upload, arena, step block, launch arguments,
// graph capture and replay, counters) on an emulated GPU: the driver entry
// points are replaced by host memory and the SIMT emulator, and "compiling" a
// variant yields its name, which the fake module maps to the same kernel
// source compiled as C++ (cuda_emulated_backend_variants.inc). The logits of
// stories260K must match the CPU backend's, step by step.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <utility>

#include "support/simt/simt.h"
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/gemv.cuh"

namespace rayo::cuda::emulated {

struct Invoker {
  int n_args = 0;
  void (*run)(const void* fn, const uint64_t* args, simt::dim3 grid, simt::dim3 block) = nullptr;
  const void* fn = nullptr;
};

template <typename T>
T from_u64(uint64_t v) {
  if constexpr (std::is_pointer_v<T>)
    return reinterpret_cast<T>(static_cast<uintptr_t>(v));
  else
    return static_cast<T>(v);
}

template <typename... A, size_t... I>
void call_with(void (*f)(A...), const uint64_t* a, std::index_sequence<I...>) {
  f(from_u64<A>(a[I])...);
}

template <typename... A>
Invoker make_invoker(void (*f)(A...)) {
  Invoker inv;
  inv.n_args = sizeof...(A);
  inv.fn = reinterpret_cast<const void*>(f);
  inv.run = [](const void* fn, const uint64_t* args, simt::dim3 grid, simt::dim3 block) {
    auto kernel = reinterpret_cast<void (*)(A...)>(const_cast<void*>(fn));
    simt::launch(grid, block, [&] { call_with(kernel, args, std::index_sequence_for<A...>{}); });
  };
  return inv;
}

}  // namespace rayo::cuda::emulated

using rayo::cuda::emulated::make_invoker;
#include "cuda_emulated_backend_variants.inc"

#include "backends/cpu/cpu_backend.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/kernel_cache.h"
#include "gguf/file.h"
#include "graph/executor.h"
#include "models/architecture.h"
#include "models/model_spec.h"
#include "support/paths.h"

namespace rayo::cuda {
namespace {

using emulated::Invoker;

struct Registered {
  const char* key;
  const char* entry;
  Invoker invoker;
};

struct Launch {
  const Invoker* inv;
  std::vector<uint64_t> args;
  simt::dim3 grid, block;
};

// The emulated GPU's state.
struct Fake {
  std::map<std::string, std::map<std::string, Invoker>> kernels;
  std::vector<std::unique_ptr<std::string>> modules;
  bool capturing = false;
  std::vector<Launch> captured;
  std::vector<std::unique_ptr<std::vector<Launch>>> graphs;
  uint64_t launches = 0;
  std::vector<size_t> d2d_copies;  // bytes of each device-to-device copy
  std::vector<std::unique_ptr<std::chrono::steady_clock::time_point>> events;
};
Fake* g_fake = nullptr;

void run_launch(const Launch& l) { l.inv->run(l.inv->fn, l.args.data(), l.grid, l.block); }

DriverApi fake_api() {
  DriverApi a;
  a.cuInit = [](unsigned) { return 0; };
  a.cuDriverGetVersion = [](int* v) { *v = 12000; return 0; };
  a.cuDeviceGetCount = [](int* n) { *n = 1; return 0; };
  a.cuDeviceGet = [](CUdevice* d, int) { *d = 0; return 0; };
  a.cuDeviceGetName = [](char* name, int len, CUdevice) { std::snprintf(name, len, "SIMT emulator"); return 0; };
  a.cuDeviceGetAttribute = [](int* v, int attr, CUdevice) {
    *v = attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
    return 0;
  };
  a.cuDeviceTotalMem = [](size_t* b, CUdevice) { *b = size_t{1} << 34; return 0; };
  a.cuDevicePrimaryCtxRetain = [](CUcontext* c, CUdevice) { *c = reinterpret_cast<CUcontext>(1); return 0; };
  a.cuDevicePrimaryCtxRelease = [](CUdevice) { return 0; };
  a.cuCtxSetCurrent = [](CUcontext) { return 0; };
  a.cuCtxSynchronize = [] { return 0; };
  a.cuModuleLoadData = [](CUmodule* m, const void* image) {
    g_fake->modules.push_back(std::make_unique<std::string>(static_cast<const char*>(image)));
    *m = reinterpret_cast<CUmodule>(g_fake->modules.back().get());
    return 0;
  };
  a.cuModuleUnload = [](CUmodule) { return 0; };
  a.cuModuleGetFunction = [](CUfunction* f, CUmodule m, const char* name) {
    const std::string& key = *reinterpret_cast<std::string*>(m);
    auto it = g_fake->kernels.find(key);
    if (it == g_fake->kernels.end() || !it->second.count(name)) {
      ADD_FAILURE() << "no emulated kernel " << name << " for variant " << key;
      return 500;  // CUDA_ERROR_NOT_FOUND
    }
    *f = reinterpret_cast<CUfunction>(&it->second.at(name));
    return 0;
  };
  a.cuLaunchKernel = [](CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned, CUstream, void** params, void**) {
    const auto* inv = reinterpret_cast<const Invoker*>(f);
    Launch l{inv, {}, simt::dim3(gx, gy, gz), simt::dim3(bx, by, bz)};
    for (int i = 0; i < inv->n_args; ++i) l.args.push_back(*static_cast<const uint64_t*>(params[i]));
    if (g_fake->capturing)
      g_fake->captured.push_back(std::move(l));
    else
      run_launch(l);
    ++g_fake->launches;
    return 0;
  };
  a.cuMemAlloc = [](CUdeviceptr* p, size_t n) {
    *p = reinterpret_cast<CUdeviceptr>(std::calloc(1, n + 64));
    return 0;
  };
  a.cuMemFree = [](CUdeviceptr p) { std::free(reinterpret_cast<void*>(p)); return 0; };
  a.cuMemAllocHost = [](void** p, size_t n) { *p = std::calloc(1, n + 64); return 0; };
  a.cuMemFreeHost = [](void* p) { std::free(p); return 0; };
  a.cuMemcpyHtoD = [](CUdeviceptr d, const void* s, size_t n) { std::memcpy(reinterpret_cast<void*>(d), s, n); return 0; };
  a.cuMemcpyDtoH = [](void* d, CUdeviceptr s, size_t n) { std::memcpy(d, reinterpret_cast<void*>(s), n); return 0; };
  a.cuMemcpyHtoDAsync = [](CUdeviceptr d, const void* s, size_t n, CUstream) {
    std::memcpy(reinterpret_cast<void*>(d), s, n);
    return 0;
  };
  a.cuMemcpyDtoHAsync = [](void* d, CUdeviceptr s, size_t n, CUstream) {
    std::memcpy(d, reinterpret_cast<void*>(s), n);
    return 0;
  };
  a.cuMemcpyDtoDAsync = [](CUdeviceptr d, CUdeviceptr s, size_t n, CUstream) {
    std::memcpy(reinterpret_cast<void*>(d), reinterpret_cast<const void*>(s), n);
    g_fake->d2d_copies.push_back(n);
    return 0;
  };
  a.cuMemGetInfo = [](size_t* free_bytes, size_t* total) {
    *free_bytes = size_t{64} << 20;
    *total = size_t{1} << 34;
    return 0;
  };
  // Events are host timestamps taken when recorded (the emulator runs everything synchronously).
  a.cuEventCreate = [](CUevent* e, unsigned) {
    g_fake->events.push_back(std::make_unique<std::chrono::steady_clock::time_point>());
    *e = reinterpret_cast<CUevent>(g_fake->events.back().get());
    return 0;
  };
  a.cuEventDestroy = [](CUevent) { return 0; };
  a.cuEventRecord = [](CUevent e, CUstream) {
    *reinterpret_cast<std::chrono::steady_clock::time_point*>(e) = std::chrono::steady_clock::now();
    return 0;
  };
  a.cuEventSynchronize = [](CUevent) { return 0; };
  a.cuEventElapsedTime = [](float* ms, CUevent start, CUevent stop) {
    const auto& t0 = *reinterpret_cast<std::chrono::steady_clock::time_point*>(start);
    const auto& t1 = *reinterpret_cast<std::chrono::steady_clock::time_point*>(stop);
    *ms = std::chrono::duration<float, std::milli>(t1 - t0).count();
    return 0;
  };
  a.cuMemsetD8 = [](CUdeviceptr d, unsigned char v, size_t n) { std::memset(reinterpret_cast<void*>(d), v, n); return 0; };
  a.cuStreamCreate = [](CUstream* s, unsigned) { *s = reinterpret_cast<CUstream>(1); return 0; };
  a.cuStreamDestroy = [](CUstream) { return 0; };
  a.cuStreamSynchronize = [](CUstream) { return 0; };
  a.cuStreamBeginCapture = [](CUstream, int) {
    g_fake->capturing = true;
    g_fake->captured.clear();
    return 0;
  };
  a.cuStreamEndCapture = [](CUstream, CUgraph* g) {
    g_fake->capturing = false;
    g_fake->graphs.push_back(std::make_unique<std::vector<Launch>>(std::move(g_fake->captured)));
    *g = reinterpret_cast<CUgraph>(g_fake->graphs.back().get());
    return 0;
  };
  a.cuGraphInstantiate = [](CUgraphExec* e, CUgraph g, unsigned long long) {
    *e = reinterpret_cast<CUgraphExec>(g);
    return 0;
  };
  a.cuGraphLaunch = [](CUgraphExec e, CUstream) {
    for (const Launch& l : *reinterpret_cast<std::vector<Launch>*>(e)) run_launch(l);
    return 0;
  };
  a.cuGraphExecDestroy = [](CUgraphExec) { return 0; };
  a.cuGraphDestroy = [](CUgraph) { return 0; };
  a.cuGetErrorString = [](CUresult, const char** s) { *s = "emulated error"; return 0; };
  a.cuGetErrorName = [](CUresult, const char** s) { *s = "CUDA_ERROR_EMULATED"; return 0; };
  return a;
}

// Installs the emulated GPU for one test and removes it after.
class EmulatedGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Nvrtc::get().is_available()) GTEST_SKIP() << "NVRTC not available: " << Nvrtc::get().unavailable_reason();
    RAYO_REQUIRE_SHARED();
    fake_ = std::make_unique<Fake>();
    const Registered all[] = {S260K_KERNELS};
    for (const auto& r : all) fake_->kernels[r.key][r.entry] = r.invoker;
    g_fake = fake_.get();
    api_ = fake_api();
    Driver::get().override_for_testing(&api_);
    set_kernel_compiler_for_testing([](const KernelSpec& spec, const std::string&) {
      NvrtcResult r;
      const std::string key = spec.key();
      r.cubin.assign(key.begin(), key.end());
      r.cubin.push_back('\0');
      return r;
    });
    cache_dir_ = test::temp_dir("emulated_backend_cache");
    const char* old = std::getenv("XDG_CACHE_HOME");
    saved_xdg_ = old ? old : "";
    had_xdg_ = old != nullptr;
    setenv("XDG_CACHE_HOME", cache_dir_.c_str(), 1);
  }
  void TearDown() override {
    if (!fake_) return;
    Driver::get().override_for_testing(nullptr);
    set_kernel_compiler_for_testing({});
    if (had_xdg_)
      setenv("XDG_CACHE_HOME", saved_xdg_.c_str(), 1);
    else
      unsetenv("XDG_CACHE_HOME");
    g_fake = nullptr;
  }
  std::unique_ptr<Fake> fake_;
  DriverApi api_;
  std::filesystem::path cache_dir_;
  std::string saved_xdg_;
  bool had_xdg_ = false;
};

struct Model {
  gguf::File file;
  models::ModelSpec spec;
  const models::Architecture* arch;
};

Model load_stories() {
  gguf::File f = gguf::File::open(test::shared_path("models/stories260K.gguf").string());
  auto spec = models::ModelSpec::from_gguf(f);
  const auto* arch = &models::find_architecture(spec.arch);
  return Model{std::move(f), std::move(spec), arch};
}

graph::KvCacheConfig kv_config(const models::ModelSpec& s) {
  return graph::KvCacheConfig{static_cast<int>(s.n_layers), s.kv_dim(), 16, 5, 64, graph::KvType::F16};
}

TEST_F(EmulatedGpu, Stories260KMatchesTheCpuBackendWithOneGraphLaunchPerToken) {
  Model m = load_stories();
  cpu::CpuBackend cpu(1);
  cpu.init_kv_cache(kv_config(m.spec));
  auto gpu = make_cuda_backend(CudaOptions{.progress = false});
  gpu->init_kv_cache(kv_config(m.spec));
  graph::Executor ec(cpu, m.arch->build(m.file, m.spec, graph::GraphConfig{1, 1}));
  graph::Executor eg(*gpu, m.arch->build(m.file, m.spec, graph::GraphConfig{1, 1}));
  EXPECT_GT(eg.fused_nodes(), 0);
  // Blocks in scrambled order: 3, 0, 4, 1 (block 2 unused).
  const std::vector<int32_t> table = {3, 0, 4, 1}, seq = {0};
  const std::vector<int32_t> tokens = {1, 403, 407, 261, 378, 410, 285, 9, 7, 32, 100, 200, 300, 17, 18, 19, 20, 21};
  TransferStats before{};
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t pos = static_cast<int32_t>(i), row = 0;
    const graph::StepInputs in{{&tokens[i], 1}, {&pos, 1}, {&row, 1}, seq, table, 4};
    auto lc = ec.step(in);
    const std::vector<float> ref(lc.begin(), lc.end());
    auto lg = eg.step(in);
    ASSERT_EQ(lg.size(), ref.size());
    double max_ref = 0;
    for (float v : ref) max_ref = std::max(max_ref, static_cast<double>(std::abs(v)));
    // Same weights (F32), same f16 cache contents; sums in other orders: the
    // logits agree to a few float roundings of their magnitude per layer.
    for (size_t k = 0; k < ref.size(); ++k) ASSERT_NEAR(lg[k], ref[k], 2e-4 * max_ref + 1e-5) << "pos " << i << " logit " << k;
    if (i == 0) before = cuda_backend_info(*gpu).stats;
  }
  const auto info = cuda_backend_info(*gpu);
  const uint64_t steps = tokens.size() - 1;
  EXPECT_EQ(info.stats.h2d - before.h2d, steps);
  EXPECT_EQ(info.stats.d2h - before.d2h, steps);
  EXPECT_EQ(info.stats.graph_launches - before.graph_launches, steps);
  EXPECT_EQ(info.stats.kernel_launches - before.kernel_launches, 0u);
  // 5 layers x (qkv, attention split + combine, out+residual, gate/up, down+residual)
  // + embed, select_rows, logits.
  EXPECT_EQ(info.kernels_per_step, 5 * 6 + 3);
}

// rayo bench's GPU roofline: device-to-device copies of an eighth of the free
// memory (here 64 MiB free: 8 MiB), one warm-up and three timed.
TEST_F(EmulatedGpu, MeasuresTheDeviceToDeviceCopyBandwidth) {
  auto gpu = make_cuda_backend(CudaOptions{.progress = false});
  const double bandwidth = gpu->measure_memory_bandwidth();
  EXPECT_GT(bandwidth, 1e8);  // host memcpy, counted as read + write
  EXPECT_EQ(fake_->d2d_copies, std::vector<size_t>(4, size_t{8} << 20));
  EXPECT_EQ(cuda_backend_info(*gpu).stats.allocated_bytes, size_t{16} << 20);
}

TEST_F(EmulatedGpu, EagerLaunchesGiveTheSameLogitsAsTheReplayedGraph) {
  Model m = load_stories();
  auto graphed = make_cuda_backend(CudaOptions{.progress = false});
  auto eager = make_cuda_backend(CudaOptions{.use_graphs = false, .progress = false});
  graphed->init_kv_cache(kv_config(m.spec));
  eager->init_kv_cache(kv_config(m.spec));
  graph::Executor a(*graphed, m.arch->build(m.file, m.spec, graph::GraphConfig{1, 1}));
  graph::Executor b(*eager, m.arch->build(m.file, m.spec, graph::GraphConfig{1, 1}));
  const std::vector<int32_t> table = {0, 1, 2, 3}, seq = {0};
  for (int32_t p = 0; p < 4; ++p) {
    const int32_t tok = 50 + 7 * p, row = 0;
    const graph::StepInputs in{{&tok, 1}, {&p, 1}, {&row, 1}, seq, table, 4};
    auto la = a.step(in);
    const std::vector<float> va(la.begin(), la.end());
    auto lb = b.step(in);
    for (size_t k = 0; k < va.size(); ++k) ASSERT_EQ(va[k], lb[k]) << "pos " << p << " logit " << k;
  }
  EXPECT_EQ(cuda_backend_info(*eager).stats.graph_launches, 0u);
  // Greedy on the device: one id comes back, the argmax of the logits.
  set_device_argmax(*eager, true);
  const int32_t tok = 5, p = 4, row = 0;
  b.step({{&tok, 1}, {&p, 1}, {&row, 1}, seq, table, 4});
  const int32_t id = sampled_ids(*eager)[0];
  auto logits = eager->output(b.graph());
  EXPECT_EQ(id, std::max_element(logits.begin(), logits.end()) - logits.begin());
}

}  // namespace
}  // namespace rayo::cuda
