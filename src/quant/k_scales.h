#pragma once
// Packing of the per-sub-block scales of the k-quants, shared by the reference
// (de)quantizers and the CPU/CUDA kernels so that every consumer decodes the
// same 12 (or 16) bytes the same way.
#include <cstdint>
#include <cstring>

namespace rayo::quant {

// Q4_K and Q5_K: eight 6-bit scales and eight 6-bit mins in 12 bytes.
// Sub-blocks 0..3 keep scale and min in the low 6 bits of bytes j and j+4;
// sub-blocks 4..7 keep their low 4 bits as the nibbles of byte j+4 and their
// top 2 bits in the (otherwise unused) top bits of bytes j-4 and j.
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Inverse of get_scale_min_k4 for one sub-block; `q` must start zeroed and the
// sub-blocks must be stored in order 0..7 (4..7 OR into bytes 0..7).
inline void set_scale_min_k4(int j, uint8_t scale, uint8_t min, uint8_t* q) {
  if (j < 4) {
    q[j] = scale;
    q[j + 4] = min;
  } else {
    q[j + 4] = static_cast<uint8_t>((scale & 0xF) | ((min & 0xF) << 4));
    q[j - 4] |= static_cast<uint8_t>((scale >> 4) << 6);
    q[j] |= static_cast<uint8_t>((min >> 4) << 6);
  }
}

// Q3_K: sixteen 6-bit scales, stored biased by 32, in 12 bytes. Bytes 0..7 hold
// the low nibbles (sub-block j in byte j%8, high nibble for j >= 8); bytes 8..11
// hold the top 2 bits (sub-block j in byte 8 + j%4, bits 2*(j/4)).
// Returns the signed scales (-32..31).
inline void unpack_q3_k_scales(const uint8_t* packed, int8_t scales[16]) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    scales[j] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

// Inverse of unpack_q3_k_scales: `biased` are the scales + 32 (0..63).
inline void pack_q3_k_scales(const uint8_t biased[16], uint8_t packed[12]) {
  std::memset(packed, 0, 12);
  for (int j = 0; j < 16; ++j) {
    const uint8_t l = biased[j];
    if (j < 8)
      packed[j] = l & 0xF;
    else
      packed[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
    packed[8 + j % 4] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
  }
}

}  // namespace rayo::quant
