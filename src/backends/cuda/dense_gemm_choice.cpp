#include "backends/cuda/dense_gemm_choice.h"

#include <cstdlib>
#include <string_view>

#include "backends/cuda/weight_layout.h"
#include "common/error.h"

namespace rayo::cuda {

using graph::Op;

bool dense_prompt_gemm_requested() {
  const char* env = std::getenv("RAYO_PROMPT_GEMM");
  const std::string_view v = env == nullptr ? "" : env;
  if (v.empty() || v == "tile") return false;
  if (v == "dense") return true;
  fail("RAYO_PROMPT_GEMM is '", v, "': use dense or tile");
}

bool uses_dense_gemm(const graph::Graph& g, const graph::Node& n) {
  switch (n.op) {
    case Op::MatMul:
    case Op::RmsNormMatMul:
    case Op::MatMulAdd:
    case Op::GateUpGlu:
    case Op::QkvRopeStore: break;
    default: return false;
  }
  if (g.config().batch_invariant || n.in[0] < 0 || n.out == g.output()) return false;
  if (g.max_rows(g.values()[n.in[0]]) < kDenseGemmMinRows || !dense_prompt_gemm_requested()) return false;
  const auto ws = graph::matrix_weights(n);
  for (int w : ws) {
    const graph::Weight& m = g.weights()[w];
    if (!has_gpu_layout(m.type) || m.cols % 32 != 0) return false;
  }
  // Gate and up interleave by groups of 8 rows (decode_f16.cu GLU_HALF).
  if (n.op == Op::GateUpGlu &&
      (g.weights()[n.weight].rows % 8 != 0 || g.weights()[n.weight].rows != g.weights()[n.aux[1]].rows))
    return false;
  return !ws.empty();
}

}  // namespace rayo::cuda
