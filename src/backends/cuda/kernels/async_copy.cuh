// Copies from global to shared memory that run while the thread goes on
// (cp.async, sm_80+), for tiles staged one step ahead of their use, and the
// dynamic shared memory such stages live in (more than the 48 KB a kernel may
// declare statically; the host sets the launch's size: kernel_specs.h,
// KernelSpec::dynamic_shared).
//
// Protocol: cp_async<N> (N = 4, 8 or 16 bytes, both addresses N-aligned) adds
// a copy to the thread's open group, cp_async_commit closes the group, and
// cp_async_wait<n> waits until at most the n most recent committed groups are
// still in flight. A copy is visible to its own thread after the wait and to
// the block after the wait and a __syncthreads. The SIMT emulator performs each
// copy only at its thread's wait (simt.h), so a missing wait or barrier shows
// as a wrong result there.
#pragma once
#include "common.cuh"

#ifdef RAYO_SIMT
template <int N>
__device__ __forceinline__ void cp_async(void* dst, const void* src) {
  static_assert(N == 4 || N == 8 || N == 16, "cp.async copies 4, 8 or 16 bytes");
  simt::cp_async(dst, src, N);
}
__device__ __forceinline__ void cp_async_commit() { simt::cp_async_commit(); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  simt::cp_async_wait(N);
}
#define RAYO_DYNAMIC_SHARED(T, name) T& name = *static_cast<T*>(::simt::dynamic_shared(sizeof(T)))
#else
// The shared-window address of a generic pointer to shared memory (the
// compiler's own conversion, which it folds into the address arithmetic).
__device__ __forceinline__ u32 shared_address(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}
// 16 bytes bypass L1 (.cg: weights are read once); 4 and 8 may only go through it (.ca).
// No "memory" clobber: the copy lands only at cp_async_wait, which has one,
// and a clobber here made ptxas guard every copy with dummy shared loads
// (it still puts three, predicated off, before each run of copies: nvcc
// does the same for a bare cp.async loop, so keep copies together).
template <int N>
__device__ __forceinline__ void cp_async(void* dst, const void* src) {
  static_assert(N == 4 || N == 8 || N == 16, "cp.async copies 4, 8 or 16 bytes");
  if (N == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared_address(dst)), "l"(src));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(shared_address(dst)), "l"(src), "n"(N));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
// A reference `name` of type T to the block's dynamic shared memory.
#define RAYO_DYNAMIC_SHARED(T, name)               \
  extern __shared__ uint4 rayo_dynamic_shared_[];  \
  T& name = *reinterpret_cast<T*>(rayo_dynamic_shared_)
#endif
