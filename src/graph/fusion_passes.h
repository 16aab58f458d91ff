#pragma once
// Fusion passes for backends with fused kernels (CPU and CUDA). Each one
// rewrites a pattern of the decoder graph into one fused node (graph/ops.h) when
// every intermediate value is read only inside the pattern:
//
//   QkvFusion      MatMul q,k,v (+AddBias) -> Rope q,k -> KvStore   => QkvRopeStore
//   GateUpFusion   MatMul gate, MatMul up -> Glu                     => GateUpGlu
//   NormFusion     RmsNorm (whole rows) read only by MatMul, GateUpGlu or
//                  QkvRopeStore nodes: folded into them (MatMul becomes RmsNormMatMul)
//   ResidualFusion MatMul -> Add                                     => MatMulAdd
//
// Run in that order (decoder_fusion_passes()). Qwen3's per-head q/k norms sit
// between the projections and rope, so its attention input keeps separate nodes.
#include <memory>
#include <vector>

#include "graph/passes.h"

namespace rayo::graph {

std::unique_ptr<Pass> make_qkv_fusion();
std::unique_ptr<Pass> make_gate_up_fusion();
std::unique_ptr<Pass> make_norm_fusion();
std::unique_ptr<Pass> make_residual_fusion();

// All of the above, in order.
std::vector<std::unique_ptr<Pass>> decoder_fusion_passes();

}  // namespace rayo::graph
