#include "graph/backend.h"

#include "common/error.h"

namespace rayo::graph {

void Backend::copy_kv_blocks(std::span<const std::pair<int32_t, int32_t>> src_dst) {
  if (!src_dst.empty()) fail("the ", name(), " backend cannot copy KV cache blocks (beam search) yet");
}

}  // namespace rayo::graph
