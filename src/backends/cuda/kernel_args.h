#pragma once
// The kernels' argument structs (kernels/kernel_args.cuh) for host code that
// fills them: the same text, compiled in rayo::cuda::kargs with host stand-ins
// for the device types, so a field's name, type and place are written once.
// Their pointers hold device addresses (Dev).
#include <cstdint>

#include "backends/cuda/driver_api.h"

namespace rayo::cuda::kargs {

typedef unsigned char u8;
typedef unsigned short u16;
typedef signed char i8;
struct float2 {
  float x, y;
};

#include "backends/cuda/kernels/kernel_args.cuh"

static_assert(sizeof(void*) == 8 && sizeof(long long) == 8, "the kernels' arguments are 8-byte fields");
static_assert(sizeof(MatmulArgs) == 13 * 8 && sizeof(QkvArgs) == 20 * 8 && sizeof(AttentionArgs) == 13 * 8,
              "an argument struct has padding: its fields are no longer all 8 bytes");

// A device address, given to a field of any pointer type: `.x = Dev{ptr}`.
struct Dev {
  CUdeviceptr p = 0;
  template <typename T>
  operator T*() const {
    return reinterpret_cast<T*>(static_cast<uintptr_t>(p));
  }
};

}  // namespace rayo::cuda::kargs
