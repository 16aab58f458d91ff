// The server's scheduler on a real GPU: with --batch-invariant, a request's
// tokens (and logprobs, to the bit) are the same alone and among 31 others,
// greedy and sampled, through prompt chunks on the exact int8 GEMMs and decode
// steps of up to 32 sequences. The emulator checks the same with 4 sequences
// (EmulatedGpu.BatchInvariantStepsOfManyTokens); here the GPU's own float
// rounding is in play. Skips when no GPU is usable.
#include <gtest/gtest.h>

#include "runtime/scheduler.h"
#include "support/batch_invariance.h"
#include "support/paths.h"
#include "support/require_gpu.h"

namespace rayo {
namespace {

TEST(CudaServingNative, BatchInvariantAmong31Others) {
  RAYO_REQUIRE_GPU();
  RAYO_REQUIRE_SHARED();
  runtime::SchedulerOptions o;
  o.max_seqs = 32;
  o.max_seq_len = 256;
  o.prefill_chunk = 64;
  o.backend.device = "cuda";
  o.batch_invariant = true;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 32; ++i) {
    std::vector<int32_t> p = {1};
    for (int j = 0; j < 8 + 5 * i; ++j) p.push_back(static_cast<int32_t>(5 + (37 * j + 11 * i) % 200));
    prompts.push_back(p);
  }
  test::expect_batch_invariant("synth-llama-q4_k_m", o, prompts, 24);
}

}  // namespace
}  // namespace rayo
