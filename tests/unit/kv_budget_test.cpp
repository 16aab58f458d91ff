#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "runtime/kv_budget.h"

namespace rayo::runtime {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(KvBudget, BlockBytesCountKAndVOfEveryLayer) {
  graph::KvCacheConfig kv;
  kv.n_layers = 32;
  kv.kv_width = 1024;  // llama3-8b: 8 KV heads of 128
  kv.block_size = 16;
  EXPECT_EQ(kv_block_bytes(kv), 2u * 32 * 16 * 1024 * 2);
  kv.type = graph::KvType::F32;
  EXPECT_EQ(kv_block_bytes(kv), 2u * 32 * 16 * 1024 * 4);
}

TEST(KvBudget, TheShareLeftAfterEverythingElseBecomesBlocks) {
  // 80 GiB GPU, 0.9 of it: 72 GiB. In use: 10 GiB, of which the 1 GiB
  // provisional pool is given back, so 9 GiB count: 63 GiB of 2 MiB blocks.
  const graph::DeviceMemory m{70 * 1024 * kMiB, 80 * 1024 * kMiB};
  EXPECT_EQ(kv_blocks_for_fraction(m, 0.9, 1024 * kMiB, 2 * kMiB, 1), 63 * 512);
  // A pool that is not on the device yet (nothing to give back).
  EXPECT_EQ(kv_blocks_for_fraction(m, 0.9, 0, 2 * kMiB, 1), 62 * 512);
}

TEST(KvBudget, RefusesAShareThatLeavesLessThanOneContext) {
  const graph::DeviceMemory m{1024 * kMiB, 8192 * kMiB};  // 7 GiB in use
  try {
    kv_blocks_for_fraction(m, 0.8, 0, 2 * kMiB, 512);  // 6.4 GiB allowed
    FAIL() << "accepted a share smaller than what is in use";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("raise --kv-fraction"), std::string::npos) << e.what();
  }
  EXPECT_EQ(kv_blocks_for_fraction(m, 1.0, 0, 2 * kMiB, 512), 512);  // exactly one context
  EXPECT_THROW(kv_blocks_for_fraction(m, 1.0, 0, 2 * kMiB, 513), Error);
}

TEST(KvBudget, TheFractionMustBeAShare) {
  const graph::DeviceMemory m{8192 * kMiB, 8192 * kMiB};
  for (double f : {0.0, -0.5, 1.5}) EXPECT_THROW(kv_blocks_for_fraction(m, f, 0, kMiB, 1), Error) << f;
}

TEST(KvBudget, NeverMoreBlocksThanABlockTableHolds) {
  const graph::DeviceMemory m{uint64_t{1} << 50, uint64_t{1} << 50};
  EXPECT_EQ(kv_blocks_for_fraction(m, 1.0, 0, 16, 1), INT32_MAX);
}

}  // namespace
}  // namespace rayo::runtime
