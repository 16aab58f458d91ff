#pragma once
// CUDA's __byte_perm as plain C++: the SIMT emulator's (simt.h), and the
// reference of the native test that checks the GPU's
// (tests/gpu/cuda_kernels_native_test.cpp: CudaKernelsNative.BytePermIsTheEmulatorsPrmt).
#include <cstdint>

namespace simt {

// Byte n of the result is byte (s >> 4n) & 7 of the 8 bytes {x (bytes 0..3),
// y (4..7)}; bit 3 of each selector nibble and the selector's upper 16 bits
// are ignored, as CUDA documents and an H200 does. (PTX prmt.b32 itself would
// replicate the selected byte's sign for a nibble with bit 3 set; the
// intrinsic does not, so kernels that mean a byte keep bit 3 clear either way.)
inline uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
  const uint64_t bytes = static_cast<uint64_t>(x) | (static_cast<uint64_t>(y) << 32);
  uint32_t r = 0;
  for (int n = 0; n < 4; ++n) r |= (static_cast<uint32_t>(bytes >> (8 * ((s >> (4 * n)) & 7))) & 0xFF) << (8 * n);
  return r;
}

}  // namespace simt
