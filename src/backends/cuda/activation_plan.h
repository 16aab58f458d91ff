#pragma once
// Which activations the CUDA kernels read as 8-bit twins (kernels/q8_act.cuh),
// and who writes them. A matmul over quantized weights reads its input's q8
// twin; one with a fused RMSNorm also reads the input's row statistics (the
// sums of squares), so that the norm is computed once per step, by the
// input's producer, rather than by every block of every consumer. The
// producer writes them in its epilogue when it can (embed, the GEMV family,
// select_rows, attention with head_dim % 32 == 0); otherwise a quantize launch
// right before the first consumer does. A matmul that runs as a dense GEMM
// (dense_gemm_choice.h) reads its input as f32 and writes no twin.
//
// A twin has its own device memory, planned like the graph's arena: twins
// whose lifetimes (writer to last reader) do not overlap share bytes.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace rayo::cuda {

struct Twin {
  int value = -1;        // the f32 activation it stands for
  int norm_weight = -1;  // the q8 part quantizes value * this weight (the consumer's RMSNorm); -1: value itself
  bool q8 = false;       // q and ds are written
  bool ss = false;       // the row statistics are written
  int writer = -1;       // the node whose epilogue writes it, or -1: a quantize launch before first_reader
  int first_reader = -1;
  int last_reader = -1;
  // Byte offsets in the twin arena (q8: q then ds; ss) and the row geometry.
  size_t q_offset = 0, ds_offset = 0, ss_offset = 0;
  int64_t cols = 0, max_rows = 0;
};

struct ActivationPlan {
  std::vector<Twin> twins;
  std::vector<int> input_twin;                  // by node: the twin its matmul reads, or -1
  std::vector<int> emits;                       // by node: the twin its epilogue writes, or -1
  std::vector<std::vector<int>> quantize_before;  // by node: twins quantize launches write just before it
  size_t arena_bytes = 0;
};

// True when node n multiplies quantized weights with 8-bit activations (all its
// matrices have a GPU layout); false for float weights, and for a node mixing
// float and quantized weights (its quantized ones are dequantized to f16).
bool reads_q8(const graph::Graph& g, const graph::Node& n);

ActivationPlan plan_activations(const graph::Graph& g);

}  // namespace rayo::cuda
