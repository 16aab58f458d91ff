#pragma once
// SIMT emulator: lets the CUDA kernels of src/backends/cuda/kernels compile as
// ordinary C++ (g++) and run on the CPU, so that every kernel is tested on
// machines without a GPU. Usage in a test:
//
//   #include "support/simt/simt.h"       // defines RAYO_SIMT and the CUDA built-ins
//   namespace gemv_q4k {                 // one namespace per shape specialisation
//   #define WTYPE 12 ...                 // the shape macros NVRTC would get as -D
//   #include "backends/cuda/kernels/gemv.cu"
//   #undef WTYPE ...
//   }
//   simt::launch({grid_x, grid_y}, {128}, [&] { gemv_q4k::gemv(args...); });
//
// Model: blocks run one after another; the threads of a block run as fibers
// (ucontext) on the calling thread, switching only at synchronisation points
// (__syncthreads, every warp shuffle and vote, __syncwarp). A shuffle is a warp
// barrier, an exchange through per-warp slots, and a second barrier, so the
// lanes of a warp behave as in lockstep wherever they communicate. `__shared__`
// variables are function statics: one instance shared by the threads of the
// running block (blocks do not overlap). Atomics need no locking (one fiber runs
// at a time). A deadlock (a barrier that some threads never reach, e.g. a
// shuffle in divergent code) aborts the test with a message instead of hanging.
#define RAYO_SIMT 1

#include <math.h>

#include <cstdint>
#include <cstring>
#include <functional>

#include "common/half.h"
#include "support/simt/byte_perm.h"

namespace simt {

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

// The built-in variables of the running fiber.
const dim3& thread_idx();
const dim3& block_idx();
const dim3& block_dim();
const dim3& grid_dim();

void syncthreads();
void syncwarp();
// Exchanges one 64-bit word per lane: returns the word lane src_lane (of this
// warp) contributed. All lanes of the warp must call it together.
uint64_t warp_exchange(uint64_t mine, int src_lane);
// Every lane's n words (n <= 16), lane after lane, into all[32 * n]. All lanes
// of the warp must call it together.
void warp_allgather(const uint32_t* mine, int n, uint32_t* all);
// mma.sync.m16n8k16.row.col.f32.f16.f16.f32 (kernels/mma.cuh documents the
// fragments): every lane's c += its part of A * B, the products summed in k
// order in float.
void mma_f16_m16n8k16(float* c, const uint32_t* a, const uint32_t* b);
// mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32: c += A (16 x 16 int8) * B (16 x 8 int8).
void mma_s8_m16n8k16(int32_t* c, const uint32_t* a, uint32_t b);
// ldmatrix.sync.aligned.m8n8.x4.shared.b16 (kernels/mma.cuh): every lane's
// row address, then each lane's four words; no lane goes on before all have read.
void ldmatrix_x4(uint32_t* r, const void* row);
// The ballot of `pred` over the warp (bit l = lane l's predicate).
uint32_t warp_ballot(bool pred);
int lane_id();

// cp.async (kernels/async_copy.cuh): the copy of `bytes` (4, 8 or 16, both
// addresses aligned to it) into shared memory joins the thread's open
// group; commit closes the group; wait(n) performs the copies of all but the
// n most recently committed groups. A copy lands only when its own thread
// waits for it, as late as a GPU may, so a read before the wait (or before the
// barrier after it, by another thread) sees the old bytes. A thread that
// exits with copies it never waited for aborts the test.
void cp_async(void* dst, const void* src, int bytes);
void cp_async_commit();
void cp_async_wait(int pending);

// The running block's dynamic shared memory (the launch's bytes, filled with
// garbage at each block's start); aborts if `bytes` exceeds what the launch gave.
void* dynamic_shared(size_t bytes);

// Runs body (a kernel call) for every thread of every block of the grid, with
// dynamic_shared_bytes of dynamic shared memory per block.
void launch(dim3 grid, dim3 block, const std::function<void()>& body, size_t dynamic_shared_bytes = 0);

// Statistics of the last launch (tests can check, e.g., that a kernel synchronised).
struct LaunchStats {
  uint64_t blocks = 0, threads = 0, switches = 0;
};
const LaunchStats& last_launch();

template <typename T>
inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8);
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
inline T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

}  // namespace simt

// ---- CUDA C++ spellings ----------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __restrict__
#define threadIdx (::simt::thread_idx())
#define blockIdx (::simt::block_idx())
#define blockDim (::simt::block_dim())
#define gridDim (::simt::grid_dim())

inline void __syncthreads() { simt::syncthreads(); }
inline void __syncwarp(unsigned = 0xffffffffu) { simt::syncwarp(); }

template <typename T>
inline T __shfl_sync(unsigned, T v, int src, int width = 32) {
  const int lane = simt::lane_id();
  return simt::from_bits<T>(simt::warp_exchange(simt::to_bits(v), (lane & ~(width - 1)) + (src & (width - 1))));
}
template <typename T>
inline T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  const int lane = simt::lane_id();
  int src = lane ^ mask;
  if ((src & ~(width - 1)) != (lane & ~(width - 1))) src = lane;
  return simt::from_bits<T>(simt::warp_exchange(simt::to_bits(v), src));
}
template <typename T>
inline T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int lane = simt::lane_id();
  int src = lane + static_cast<int>(delta);
  if ((src & ~(width - 1)) != (lane & ~(width - 1))) src = lane;
  return simt::from_bits<T>(simt::warp_exchange(simt::to_bits(v), src));
}
template <typename T>
inline T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int lane = simt::lane_id();
  int src = lane - static_cast<int>(delta);
  if (src < (lane & ~(width - 1))) src = lane;
  return simt::from_bits<T>(simt::warp_exchange(simt::to_bits(v), src));
}
inline unsigned __ballot_sync(unsigned, int pred) { return simt::warp_ballot(pred != 0); }
inline int __any_sync(unsigned, int pred) { return simt::warp_ballot(pred != 0) != 0; }
inline int __all_sync(unsigned, int pred) { return simt::warp_ballot(pred != 0) == 0xffffffffu; }

// Atomics: one fiber runs at a time and none switches inside these.
template <typename T>
inline T atomicAdd(T* p, T v) {
  T old = *p;
  *p = old + v;
  return old;
}
inline int atomicMax(int* p, int v) {
  int old = *p;
  if (v > old) *p = v;
  return old;
}
inline unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v) {
  unsigned old = *p;
  if (old == cmp) *p = v;
  return old;
}

// CUDA's vector types and the loads and conversions the kernels use.
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float2 make_float2(float x, float y) { return float2{x, y}; }
// One block runs at a time: every write is visible to the next block already.
inline void __threadfence() {}
template <typename T>
inline T __ldcg(const T* p) {
  return *p;
}
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
// Round to nearest even, as cvt.rni (the default rounding mode of the host).
inline int __float2int_rn(float x) { return static_cast<int>(nearbyintf(x)); }

// Integer dot product of four signed bytes, plus c.
inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i) c += static_cast<int8_t>(a >> (8 * i)) * static_cast<int8_t>(b >> (8 * i));
  return c;
}
// PTX prmt.b32 in its default mode (byte_perm.h).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) { return simt::byte_perm(x, y, s); }
inline float __uint_as_float(unsigned u) { return simt::from_bits<float>(u); }
inline unsigned __float_as_uint(float f) { return static_cast<unsigned>(simt::to_bits(f)); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline float __expf(float x) { return expf(x); }
inline float __fdividef(float a, float b) { return a / b; }

// The half conversions the kernels write as inline PTX (cvt.f32.f16,
// cvt.rn.f16.f32): the same round-to-nearest-even as common/half.h.
inline float h2f(unsigned short h) { return rayo::fp16_to_fp32(h); }
inline unsigned short f2h(float f) { return rayo::fp32_to_fp16(f); }
