#pragma once
// The layouts matrices have on the GPU. The CUDA kernels read every weight with
// aligned 16-byte loads, which GGUF's packed blocks do not allow for most
// formats (a Q8_0 block is 34 bytes, a Q6_K block 210): so at upload each
// block is split into planes, pieces of the block stored block after block,
// each plane starting at a 256-byte boundary. Plane 0 holds the bulk of the
// block (the quants, 16-byte multiples), the later planes its small fields
// (scales, high bits). Nothing is added or converted: a matrix takes as many
// bytes on the GPU as in the file, plus the planes' alignment padding (and
// its end rounded up to 16 bytes).
//
// Plane 0's pieces are ordered so that each load instruction of a warp reads
// whole 32-byte sectors (the loads bypass L1, so a sector half used is a
// sector L2 serves twice). A GEMV lane reads a unit of 32 or 64 values with
// two 16-byte loads (weight_formats.cuh); in the file a unit's 32 bytes are
// contiguous, so each load used half of every sector it touched. Here the
// first 16 bytes of the block's units come first, then the second 16: the
// warp's first load takes the block's first half whole, its second the rest.
// Q8_0, whose unit is a whole 32-byte block, pairs blocks 2i and 2i + 1 (when
// a row has an even number of blocks, so that pairs stay within rows): their
// first halves, then their second halves.
//
// Block b of row r is element r * (cols / block) + b of every plane. The
// kernels compute the same offsets (kernels/weight_formats.cuh), from the
// matrix's rows and cols, which they are specialised to.
//
//   format  block  plane 0: bytes of the block, in order        plane 1            plane 2
//   Q4_0    32     qs [2, 18)                                   d [0, 2)
//   Q4_1    32     qs [4, 20)                                   d, m [0, 4)
//   Q5_0    32     qs [6, 22)                                   qh [2, 6)          d [0, 2)
//   Q5_1    32     qs [8, 24)                                   qh [4, 8)          d, m [0, 4)
//   Q8_0    32     qs [2, 34)                                   d [0, 2)
//   (paired) 64    qs halves [2,18) [36,52) [18,34) [52,68)     d [0,2) [34,36)
//   Q2_K    256    qs [16, 80)                                  scales [0, 16)     d, dmin [80, 84)
//   Q3_K    256    hmask, qs [0, 96)                            scales [96, 108)   d [108, 110)
//   Q4_K    256    qs [16, 144): 16 + 32j, then 32 + 32j        d, dmin, scales [0, 16)
//   Q5_K    256    qs [48, 176): 48 + 32j, then 64 + 32j        d, dmin, scales [0, 16)  qh [16, 48)
//   Q6_K    256    ql [0, 128): 32j, then 16 + 32j;             scales [192, 208)  d [208, 210)
//                  qh [128, 192): 128, 160, 144, 176
//   IQ4_NL  32     qs [2, 18)                                   d [0, 2)
//   IQ4_XS  256    qs [8, 136): 8 + 32j, then 24 + 32j          d, scales_h, scales_l [0, 8)
//
// (j = 0..3, 16 bytes each.) Float formats (F32, F16, BF16) keep their rows as
// stored.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "quant/tensor_type.h"

namespace rayo::cuda {

constexpr size_t kPlaneAlignment = 256;

// A byte range of a group of blocks (first byte, bytes).
struct BlockPiece {
  int first = 0, bytes = 0;
};

struct WeightPlane {
  std::vector<BlockPiece> pieces;  // of a group of blocks, in the plane's order
  int bytes = 0;                   // bytes per block in this plane
  size_t offset = 0;               // where the plane starts in the matrix's device buffer
};

struct WeightLayout {
  TensorType type = TensorType::F32;
  int64_t rows = 0, cols = 0;
  int group_blocks = 1;             // blocks laid out together: 2 for paired Q8_0
  std::vector<WeightPlane> planes;  // one plane: the file's bytes unchanged
  size_t bytes = 0;                 // device buffer size
  bool repacked() const { return planes.size() > 1; }
};

// True for the quantized formats the GPU multiplies with 8-bit activations.
bool has_gpu_layout(TensorType type);

// The layout of a rows x cols matrix of `type` (any type: float and unsplit
// formats get one plane of the file's bytes).
WeightLayout gpu_layout(TensorType type, int64_t rows, int64_t cols);

// Blocks per row.
int64_t blocks_per_row(const WeightLayout& layout);

// Splits n consecutive rows of the matrix (`src`: their bytes as in the file)
// into their planes, written one after another to `dst`: plane p's part at
// n * blocks_per_row * (the bytes per block of the planes before p). Uploading
// then copies each part to plane_row_offset(layout, p, first row).
void split_rows(const WeightLayout& layout, const void* src, int64_t n, uint8_t* dst);

// Where plane p's bytes of row `row` start in the matrix's device buffer.
size_t plane_row_offset(const WeightLayout& layout, int p, int64_t row);

}  // namespace rayo::cuda
