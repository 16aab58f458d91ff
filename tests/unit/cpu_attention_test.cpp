// The tiled attention kernel against the per-query reference (attention_head):
// head sizes, GQA groups, several queries at different positions, sequences
// scattered over non-contiguous cache rows, f16 and f32 caches. The two sum in
// the same order, so they must agree bit for bit (the parity tests' small
// random models amplify any rounding change in their logits).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "backends/cpu/attention.h"
#include "backends/cpu/cpu_features.h"
#include "backends/cpu/ops.h"
#include "common/aligned_buffer.h"

namespace rayo::cpu {
namespace {

struct Case {
  int head_dim, n_head_kv, group;
  std::vector<int32_t> positions;  // of the tile's tokens
  graph::KvType type;
  int window = 0;      // sliding window (0: none)
  float scale = 0.0f;  // q·k multiplier (0: 1/√head_dim)
};

void check(const Case& c) {
  SCOPED_TRACE(::testing::Message() << "head_dim " << c.head_dim << ", group " << c.group << ", kv "
                                    << (c.type == graph::KvType::F16 ? "f16" : "f32") << ", window " << c.window);
  const int32_t max_pos = *std::max_element(c.positions.begin(), c.positions.end());
  graph::KvCacheConfig cfg;
  cfg.n_layers = 2;
  cfg.kv_width = static_cast<int64_t>(c.n_head_kv) * c.head_dim;
  cfg.block_size = 16;
  cfg.n_blocks = (max_pos + 1 + 15) / 16 * 2;  // twice what the sequence needs: rows are scattered
  cfg.max_seq_len = max_pos + 1;
  cfg.type = c.type;
  KvCache cache;
  cache.init(cfg);

  std::mt19937 rng(c.head_dim * 131 + c.group);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  // Position j lives in row rows[j]: blocks in reverse order, so the sequence is not contiguous.
  std::vector<int64_t> rows(max_pos + 1);
  const int64_t n_seq_blocks = (max_pos + 16) / 16;
  for (int32_t j = 0; j <= max_pos; ++j) rows[j] = (2 * (n_seq_blocks - 1 - j / 16) + 1) * 16 + j % 16;
  std::vector<float> k(cfg.kv_width), v(cfg.kv_width);
  int32_t min_first = max_pos;
  for (int32_t p : c.positions) min_first = std::min(min_first, first_visible(c.window, p));
  for (int32_t j = 0; j <= max_pos; ++j) {
    for (auto& x : k) x = 2.0f * nd(rng);
    for (auto& x : v) x = nd(rng);
    // Positions no query of the tile sees hold NaN: reading one would show.
    if (j < min_first) std::fill(k.begin(), k.end(), NAN), std::fill(v.begin(), v.end(), NAN);
    cache.store(1, rows[j], k.data(), v.data());
  }

  for (int kv_head = 0; kv_head < c.n_head_kv; ++kv_head) {
    const int n = static_cast<int>(c.positions.size()) * c.group;
    std::vector<std::vector<float>> q(n, std::vector<float>(c.head_dim)), got(n, std::vector<float>(c.head_dim));
    std::vector<const float*> qp(n);
    std::vector<float*> op(n);
    std::vector<int32_t> pos(n), first(n);
    for (int i = 0; i < n; ++i) {
      for (auto& x : q[i]) x = nd(rng);
      qp[i] = q[i].data();
      op[i] = got[i].data();
      pos[i] = c.positions[i / c.group];
      first[i] = first_visible(c.window, pos[i]);
    }
    AttentionTile tile{1, kv_head, c.head_dim, rows.data(), n, qp.data(), pos.data(), op.data(), first.data(), c.scale};
    AlignedBuffer scratch(attention_tile_scratch_bytes(c.head_dim, n, max_pos));
    attention_tile(cache, tile, scratch.data());

    std::vector<float> scores(max_pos + 1), want(c.head_dim);
    for (int i = 0; i < n; ++i) {
      const float scale = c.scale != 0.0f ? c.scale : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
      attention_head(cache, 1, kv_head, c.head_dim, scale, q[i].data(), first[i], pos[i], rows.data(), scores.data(),
                     want.data());
      for (int d = 0; d < c.head_dim; ++d) {
        ASSERT_TRUE(std::isfinite(want[d])) << "the reference read a position outside the window";
        ASSERT_EQ(got[i][d], want[d]) << "query " << i << " at " << pos[i] << ", value " << d;
      }
    }
  }
}

class CpuAttentionTile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "the tiled kernel needs AVX2";
    saved_ = active_isa();
    set_active_isa(Isa::Avx2);
  }
  void TearDown() override {
    if (isa_supported(Isa::Avx2)) set_active_isa(saved_);
  }
  Isa saved_ = Isa::Scalar;
};

TEST_F(CpuAttentionTile, MatchesPerQueryReference) {
  for (graph::KvType type : {graph::KvType::F16, graph::KvType::F32}) {
    check({64, 4, 8, {0, 1, 2, 3, 4, 5, 6, 7}, type});           // prompt tile: first positions
    check({64, 2, 4, {37}, type});                              // decode: one token, a partial chunk
    check({128, 1, 1, {15, 16, 17}, type});                     // chunk boundaries, no GQA
    check({8, 2, 3, {100, 101, 102, 103}, type});               // tiny heads
    check({80, 2, 7, {200, 201}, type});                        // head size not a multiple of 64
    check({256, 1, 2, {0, 63, 64, 300}, type});                 // widest head, scattered positions
  }
}

// Sliding windows (Gemma 3): each query sees its last `window` positions, the
// tile's queries start at different positions, and the positions before the
// earliest of them are never read.
TEST_F(CpuAttentionTile, SlidingWindowMatchesPerQueryReference) {
  for (graph::KvType type : {graph::KvType::F16, graph::KvType::F32}) {
    check({64, 2, 4, {37}, type, 16});                          // decode: window inside one chunk edge
    check({256, 1, 4, {40, 41, 42, 43, 44, 45}, type, 7});      // prompt tile, window shorter than the tile span
    check({128, 2, 2, {15, 16, 17, 100}, type, 33, 0.0625f});   // window across chunks, Gemma's own scale
    check({64, 1, 1, {3, 4, 5}, type, 512});                    // window longer than the sequence: all positions
  }
}

TEST_F(CpuAttentionTile, LargeScoresStayFinite) {
  // Query and keys both large: scores in the thousands must not overflow the softmax.
  graph::KvCacheConfig cfg;
  cfg.n_layers = 1;
  cfg.kv_width = 64;
  cfg.block_size = 16;
  cfg.n_blocks = 4;
  cfg.max_seq_len = 40;
  cfg.type = graph::KvType::F32;
  KvCache cache;
  cache.init(cfg);
  std::vector<float> k(64, 4.0f), v(64);
  std::vector<int64_t> rows(40);
  for (int j = 0; j < 40; ++j) {
    rows[j] = j;
    for (int d = 0; d < 64; ++d) v[d] = static_cast<float>(j);
    k[0] = 10.0f * static_cast<float>(j);  // the last position scores highest, by far
    cache.store(0, j, k.data(), v.data());
  }
  std::vector<float> q(64, 30.0f), out(64);
  const float* qp = q.data();
  float* op = out.data();
  const int32_t pos = 39;
  AttentionTile tile{0, 0, 64, rows.data(), 1, &qp, &pos, &op, nullptr, 0.0f};
  AlignedBuffer scratch(attention_tile_scratch_bytes(64, 1, pos));
  attention_tile(cache, tile, scratch.data());
  for (float x : out) {
    ASSERT_TRUE(std::isfinite(x));
    EXPECT_NEAR(x, 39.0f, 1e-3f);  // the softmax is one-hot on the last position
  }
}

TEST(CpuAttentionTileSupport, HeadSizes) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP();
  const Isa saved = active_isa();
  set_active_isa(Isa::Avx2);
  EXPECT_TRUE(attention_tile_supported(64));
  EXPECT_TRUE(attention_tile_supported(256));
  EXPECT_FALSE(attention_tile_supported(12));   // not a multiple of 8: the reference path
  EXPECT_FALSE(attention_tile_supported(512));  // wider than the kernel's accumulators
  set_active_isa(Isa::Scalar);
  EXPECT_FALSE(attention_tile_supported(64));
  set_active_isa(saved);
}

}  // namespace
}  // namespace rayo::cpu
