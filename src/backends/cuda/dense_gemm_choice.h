#pragma once
// Which matmul nodes of a prompt graph run as dense GEMMs: each matrix decoded
// to f16 once per step (kernels/decode_f16.cu), the tokens converted to f16
// with the node's RMSNorm applied (dense_rows.cu), one f16 GEMM
// (gemm_dense.cu: with the residual added or gate/up's activation applied in
// its epilogue; q/k/v into a scratch of their rows, whose bias, rotation and
// cache store gemm_qkv_rope_store.cu's rope_store_rows then does). Such nodes
// read no 8-bit twin and write none (activation_plan.h).
//
// Off by default until a GPU has timed it against the f16 tile: on an H100
// the f16 tile ran llama3-8b's pp512 at 0.61-0.65x llama.cpp; the dense GEMM's
// inner loop issues 2.9 instructions per MMA against the tile's 15 (see
// docs/gpu-log.md). RAYO_PROMPT_GEMM=dense turns it on, to time whole steps.
#include <cstdint>

#include "graph/graph.h"

namespace rayo::cuda {

// Graphs of at least this many token rows (the dense GEMM's token tile) may
// multiply densely.
constexpr int64_t kDenseGemmMinRows = 128;

// Whether RAYO_PROMPT_GEMM asks for the dense path ("dense"; unset, empty or
// "tile": the quantized tiles). Fails with one line for another value.
bool dense_prompt_gemm_requested();

// Whether matmul node n of g runs as a dense GEMM: the dense path requested, a
// graph that is not batch-invariant, at least kDenseGemmMinRows rows in, every
// matrix quantized (in a GPU layout) with rows of a multiple of 32 values
// (gate/up: a multiple of 8 rows each), and not the logits (whose f16 copy
// would take a GB for a large vocabulary).
bool uses_dense_gemm(const graph::Graph& g, const graph::Node& n);

}  // namespace rayo::cuda
