#pragma once
// Row-interleaved ("packed") weight layouts of the SIMD matmul kernels, for
// every quantized format, and the repacking that writes them at load.
//
// Idea: R consecutive weight rows form a group (R = 8 for the AVX2 kernels,
// 16 for the AVX-512 ones), and the group's values are stored so that one
// 4R-byte vector holds 4 consecutive values (a "quad") of each of the R rows,
// one row per 32-bit lane. A multiply-add of bytes (vpdpbusd, or vpmaddubsw +
// vpmaddwd) then multiplies the quad of every row by the same 4 activation
// bytes broadcast to all lanes and accumulates per row, so the lanes end up
// holding the R outputs: no horizontal reduction, one store per token.
//
// A chunk of 32 values of a row is 8 quads; in every layout the chunk decodes
// to 8 vectors w[0..7] where w[j] holds values 4j .. 4j+3 of each row, as
// unsigned bytes (the kernels remove the formats' offsets with the activation
// sums), except Q8_0 (bytes w + 128) and the IQ4 formats (indices into the
// level table). Packed bits:
//   nibbles  4 vectors per chunk; vector c, byte (row r, i): low nibble = value
//            4c + i, high nibble = value 16 + 4c + i (so w[c] and w[4 + c]).
//   bit4     1 vector per chunk (Q5_0, Q5_1, Q5_K): byte (r, i): bit c = bit 4
//            of value 4c + i, bit 4 + c = bit 4 of value 16 + 4c + i.
//   crumbs   2 vectors per chunk (Q2_K, Q3_K); vector v, byte (r, i): bits
//            2m, 2m+1 = low 2 bits of value 16v + 4m + i (so w[4v + m]).
//   bit2     1 vector per chunk (Q3_K): byte (r, i): bit j = bit 2 of value
//            4j + i.
//
// Rows past the end of the matrix are padded with zero scales. Per group, in
// bytes ("[R]" = one entry per row, f16 = IEEE half as in the file):
//
// Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, per block of 32 values (the file's bytes),
// in reading order, so that a group is one forward stream:
//   nibbles (16R); bit4 (4R, Q5_0 and Q5_1); d[R] f16; m[R] f16 (Q4_1, Q5_1)
//   (a group is rounded up to 64 bytes)
// Q8_0, per pair of blocks (68R; a last odd block is paired with a zero block):
//   d[2 blocks][R] f16 @0, qs[2 blocks][8 quads][R][4] u8 = w + 128 @4R
// The k-quants, per super-block of 256 values:
// Q4_K (144R: exactly the file's bytes)
//   nibbles[8 sub] @0 (sub s at 16R s); lo[8 sub][R] @128R: low nibble = scale
//   bits 0-3, high nibble = min bits 0-3; hi[R] u32 @136R: bits 2s, 2s+1 =
//   scale bits 4-5 of sub s, bits 16+2s, 17+2s = min bits 4-5; d[R] @140R,
//   dmin[R] @142R
// Q5_K (176R: the file's bytes)
//   as Q4_K, with bit4[8 sub] @128R and lo @160R, hi @168R, d @172R, dmin @174R
// Q6_K (212R; R = 16 puts every unit on a 64-byte boundary), in reading order
//   sc[16 sub][R] int8 @0, d[R] @16R, then per unit u of 32 values at
//   20R + 24R u: nibbles of the low 4 bits (16R), then qh[2 h][R][4] (8R):
//   bits 2j, 2j+1 of byte (r, i) = bits 4-5 of value 16h + 4j + i
// Q2_K (84R: the file's bytes)
//   crumbs[8 chunks] @0 (8R each); sc[16 sub][R] @64R as the file (low nibble
//   scale, high nibble min); d[R] @80R, dmin[R] @82R
// Q3_K (116R; the file has 110R): value = d * sc * (u - 4), u = 0..7
//   crumbs[8 chunks] @0; bit2[8 chunks] @64R; sc[16 sub][R] int8 (-32..31)
//   @96R; d[R] @112R; 2R padding
// IQ4_XS (140R; the file has 136R): value = d * sc * level[index]
//   nibbles[8 sub] @0; sc[8 sub][R] int8 (the file's 6-bit scale - 32)
//   @128R; d[R] @136R; 2R padding
// F16, BF16 (2R per value, the file's halves): value k of row r at half
//   k R + r, so that one vector of R halves holds value k of every row
//   (kernels_packed_half.cpp); padding rows are zeros
#include <cstddef>
#include <cstdint>
#include <memory>

#include "backends/cpu/huge_pages.h"
#include "quant/tensor_type.h"

namespace rayo::cpu {

struct PackedWeight {
  TensorType type;
  int64_t rows, cols;
  int group_rows;       // R: rows interleaved per group
  int64_t groups;       // ceil(rows / R)
  size_t group_bytes;   // bytes per group
  HugePageBuffer data;  // streamed end to end by the matrix-vector kernels
};

namespace detail::packed {

// True for the formats above.
bool has_layout(TensorType type);

// Repacks rows x cols values of `type` (the file's bytes) into groups of
// `group_rows` (8 or 16) rows.
std::shared_ptr<const PackedWeight> pack(TensorType type, const void* data, int64_t rows, int64_t cols, int group_rows);

// Offsets of block b of the 32-value formats.
struct Legacy32 {
  int R;
  bool fifth_bit, min;  // Q5_0/Q5_1; Q4_1/Q5_1
  constexpr size_t block() const { return static_cast<size_t>((18 + (fifth_bit ? 4 : 0) + (min ? 2 : 0)) * R); }
  constexpr size_t nibbles(int64_t b) const { return block() * static_cast<size_t>(b); }
  constexpr size_t bit4(int64_t b) const { return nibbles(b) + static_cast<size_t>(16 * R); }
  constexpr size_t d(int64_t b) const { return nibbles(b) + static_cast<size_t>((16 + (fifth_bit ? 4 : 0)) * R); }
  constexpr size_t m(int64_t b) const { return d(b) + static_cast<size_t>(2 * R); }
};
constexpr Legacy32 legacy32(TensorType type, int R) {
  return {R, type == TensorType::Q5_0 || type == TensorType::Q5_1, type == TensorType::Q4_1 || type == TensorType::Q5_1};
}

constexpr size_t kQ8_0Pair(int R) { return static_cast<size_t>(68 * R); }

struct Q4K {
  static constexpr size_t super(int R) { return 144 * R; }
  static constexpr size_t nibbles(int R, int s) { return 16 * R * s; }
  static constexpr size_t lo(int R) { return 128 * R; }
  static constexpr size_t hi(int R) { return 136 * R; }
  static constexpr size_t d(int R) { return 140 * R; }
  static constexpr size_t dmin(int R) { return 142 * R; }
};
struct Q5K {
  static constexpr size_t super(int R) { return 176 * R; }
  static constexpr size_t nibbles(int R, int s) { return 16 * R * s; }
  static constexpr size_t bit4(int R, int s) { return 128 * R + 4 * R * s; }
  static constexpr size_t lo(int R) { return 160 * R; }
  static constexpr size_t hi(int R) { return 168 * R; }
  static constexpr size_t d(int R) { return 172 * R; }
  static constexpr size_t dmin(int R) { return 174 * R; }
};
struct Q6K {
  static constexpr size_t super(int R) { return 212 * R; }
  static constexpr size_t sc(int R, int s) { return R * s; }
  static constexpr size_t d(int R) { return 16 * R; }
  static constexpr size_t unit(int R, int u) { return 20 * R + 24 * R * u; }  // nibbles, then qh at +16R
};
struct Q2K {
  static constexpr size_t super(int R) { return 84 * R; }
  static constexpr size_t crumbs(int R, int k) { return 8 * R * k; }
  static constexpr size_t sc(int R, int s) { return 64 * R + R * s; }
  static constexpr size_t d(int R) { return 80 * R; }
  static constexpr size_t dmin(int R) { return 82 * R; }
};
struct Q3K {
  static constexpr size_t super(int R) { return 116 * R; }
  static constexpr size_t crumbs(int R, int k) { return 8 * R * k; }
  static constexpr size_t bit2(int R, int k) { return 64 * R + 4 * R * k; }
  static constexpr size_t sc(int R, int s) { return 96 * R + R * s; }
  static constexpr size_t d(int R) { return 112 * R; }
};
struct IQ4XS {
  static constexpr size_t super(int R) { return 140 * R; }
  static constexpr size_t nibbles(int R, int s) { return 16 * R * s; }
  static constexpr size_t sc(int R, int s) { return 128 * R + R * s; }
  static constexpr size_t d(int R) { return 136 * R; }
};

}  // namespace detail::packed
}  // namespace rayo::cpu
