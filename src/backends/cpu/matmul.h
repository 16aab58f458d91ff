#pragma once
// Matrix multiplication of a weight matrix by a batch of activation rows, the
// CPU backend's hot spot:
//
//     y[t][r] = sum_k W[r][k] * x[t][k]     r < rows (M), k < cols (K), t < n_tokens
//
// W is a GGUF tensor of `rows` rows of `cols` values in any supported type
// (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, IQ4_NL, IQ4_XS); x and y are
// row-major float matrices (one row per token). n_tokens == 1 is the decode
// matrix-vector product; larger batches are prompt processing.
//
// Quantized weights are multiplied by activations quantized per row to 8-bit
// blocks, as llama.cpp does: blocks of 32 with a float scale for the 32-value
// formats, super-blocks of 256 for the k-quants. The activations are quantized
// once per call into the workspace and shared by all threads; the result is
// the exact product of the dequantized weights with the dequantized quantized
// activations up to float rounding. Float weights multiply the float
// activations directly.
//
// Usage:
//   MatmulWeight w = prepare_weight(type, data, rows, cols);     // once, at load
//   std::vector<std::byte> ws(matmul_workspace_bytes(w, max_tokens, pool.size()));
//   matmul(pool, w, x, n_tokens, y, ws.data());                   // every step
//
// prepare_weight repacks quantized weights into a row-interleaved layout when
// the AVX2 or AVX-512 kernels are active (packed_layouts.h, kernels_packed.h).
// Memory: the packed copy has the size of the original (most formats exactly;
// +1% for Q6_K, +3-5% for Q3_K and IQ4_XS) and is the only copy those kernels
// read. During loading both
// copies are touched; afterwards the original's file pages are no longer
// used, so the caller may drop them (madvise(MADV_DONTNEED) on a private file
// mapping, or simply let the page cache reclaim them) to keep resident memory
// at about one copy of the weights. `data` must stay mapped regardless: other
// instruction sets and formats without a packed layout read it, and reading it
// again after MADV_DONTNEED just faults the pages back in from the file.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "backends/cpu/thread_pool.h"
#include "quant/tensor_type.h"

namespace rayo::cpu {

struct PackedWeight;  // packed_layouts.h

struct MatmulWeight {
  TensorType type = TensorType::F32;
  const void* data = nullptr;  // rows * row_bytes(type, cols), not owned
  int64_t rows = 0, cols = 0;
  std::shared_ptr<const PackedWeight> packed;  // interleaved copy, or null
};

// True when matmul handles weights of this type.
bool matmul_supported(TensorType type);

// Validates the shape (cols a multiple of the block size) and, for the formats
// with a packed layout on the active instruction set, repacks. Fails with a
// one-line error on an unsupported type or bad shape.
MatmulWeight prepare_weight(TensorType type, const void* data, int64_t rows, int64_t cols);

// Bytes of workspace matmul needs for up to n_tokens rows with n_threads threads.
size_t matmul_workspace_bytes(const MatmulWeight& w, int64_t n_tokens, int n_threads);

struct MatmulStrides {
  int64_t x = 0;  // floats between consecutive rows of x; 0 means cols
  int64_t y = 0;  // floats between consecutive rows of y; 0 means rows (lets y be a wider buffer)
};

// y = x * W^T on all threads of the pool. workspace: matmul_workspace_bytes(w,
// n_tokens, pool.size()) bytes, any alignment. x and y must not overlap.
void matmul(ThreadPool& pool, const MatmulWeight& w, const float* x, int64_t n_tokens, float* y,
            void* workspace, MatmulStrides strides = {});

// Several products of the same activations, y_i = x * W_i^T (the q, k and v
// projections; gate and up): one pool run for all of them, the activations
// quantized once per activation format. Each y_i is exactly what matmul would
// give. The weights (at most 4) must have the same cols.
struct MatmulOutput {
  const MatmulWeight* w = nullptr;
  float* y = nullptr;  // n_tokens rows of w->rows floats, overlapping neither x nor another y
};
size_t matmul_workspace_bytes(std::span<const MatmulWeight* const> weights, int64_t n_tokens, int n_threads);
void matmul_many(ThreadPool& pool, std::span<const MatmulOutput> outputs, const float* x, int64_t n_tokens,
                 void* workspace);

}  // namespace rayo::cpu
