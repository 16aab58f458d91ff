#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "runtime/kv_budget.h"
#include "runtime/session.h"
#include "support/paths.h"
#include "support/synth_models.h"

namespace rayo::runtime {
namespace {

std::shared_ptr<const Model> stories() {
  return Model::load(test::shared_path("models/stories260K.gguf").string());
}

SessionOptions small(int64_t n_ctx, int64_t n_batch = 512) {
  SessionOptions o;
  o.n_ctx = n_ctx;
  o.n_batch = n_batch;
  o.backend.n_threads = 2;
  return o;
}

uint64_t decode_dispatches(Session& s) {
  const std::vector<int32_t> prompt = {1, 403, 407};
  s.eval(prompt);
  const auto& ex = s.decode_executor();
  const uint64_t before = ex.dispatches();
  const int32_t next = 261;
  s.eval(std::span<const int32_t>(&next, 1));
  EXPECT_EQ(ex.graph().nodes().size(), ex.dispatches() - before);
  return ex.dispatches() - before;
}

TEST(Session, DecodeStepDispatchesOneNodePerOpOfTheGraph) {
  RAYO_REQUIRE_SHARED();
  auto model = stories();
  SessionOptions o = small(32);
  o.backend.fuse = false;
  Session s(model, o);
  // Llama: embed; per layer norm, q, k, v, 2 rope, kv store, attention, out, add,
  // norm, gate, up, swiglu, down, add (16); then select rows, norm, output.
  EXPECT_EQ(decode_dispatches(s), 1 + 16 * model->spec().n_layers + 3);
}

TEST(Session, FusedDecodeStepDispatchesFiveNodesPerLayer) {
  RAYO_REQUIRE_SHARED();
  auto model = stories();
  Session s(model, small(32));
  // Llama fused: embed; per layer norm+qkv+rope+kv store, attention, out+add,
  // norm+gate+up+swiglu, down+add (5); then select rows, norm+output.
  EXPECT_EQ(decode_dispatches(s), 1 + 5 * model->spec().n_layers + 2);
}

// The CPU's fused ops reproduce the unfused nodes' arithmetic exactly, on every
// architecture's pattern (Qwen2's biases, Qwen3's per-head norms) and on both
// activation formats (32-value blocks for Q4_0, super-blocks for the k-quants).
TEST(Session, FusedAndUnfusedStepsGiveIdenticalLogits) {
  RAYO_REQUIRE_SHARED();
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 300, 410, 286, 317};
  for (const char* name : {"stories260K.gguf", "synth-llama-q4_0.gguf", "synth-llama-q4_k_m.gguf",
                           "synth-qwen2-q4_k_m.gguf", "synth-qwen3-q4_k_m.gguf", "synth-qwen3-bf16.gguf"}) {
    SCOPED_TRACE(name);
    auto model = Model::load(test::shared_path(std::string("models/") + name).string());
    SessionOptions o = small(64, 4);  // prefill in steps of 4, 4 and 1; then decode steps
    Session fused(model, o);
    o.backend.fuse = false;
    Session unfused(model, o);
    const std::vector<float> a = fused.eval_all(prompt), b = unfused.eval_all(prompt);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "prefill logit " << i;
    for (int32_t token : {5, 17, 42}) {
      const auto x = fused.eval(std::span<const int32_t>(&token, 1));
      const auto y = unfused.eval(std::span<const int32_t>(&token, 1));
      for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << "decode logit " << i;
    }
  }
}

TEST(Session, BatchedPrefillMatchesOneTokenAtATime) {
  RAYO_REQUIRE_SHARED();
  auto model = stories();
  const std::vector<int32_t> tokens = {1, 403, 407, 261, 378, 300, 410, 286, 317, 274};
  Session batched(model, small(64, 4));  // 10 tokens in steps of 4, 4 and 2
  auto all = batched.eval_all(tokens);
  Session single(model, small(64, 1));
  for (size_t t = 0; t < tokens.size(); ++t) {
    auto logits = single.eval(std::span<const int32_t>(&tokens[t], 1));
    for (int64_t v = 0; v < single.n_vocab(); ++v)
      ASSERT_NEAR(logits[v], all[t * single.n_vocab() + v], 1e-3) << "token " << t << " vocab " << v;
  }
}

TEST(Session, RefusesSequencesLongerThanTheContext) {
  RAYO_REQUIRE_SHARED();
  Session s(stories(), small(4));
  const std::vector<int32_t> five = {1, 2, 3, 4, 5};
  try {
    s.eval(five);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("longer than the context of 4"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.n_past(), 0) << "a refused eval must not advance the sequence";
}

TEST(Session, RewindReplaysIdentically) {
  RAYO_REQUIRE_SHARED();
  Session s(stories(), small(32));
  const std::vector<int32_t> prompt = {1, 403, 407, 261};
  const int32_t next = 378;
  s.eval(prompt);
  auto l1 = s.eval(std::span<const int32_t>(&next, 1));
  const std::vector<float> first(l1.begin(), l1.end());
  EXPECT_EQ(s.n_past(), 5);
  s.rewind(4);
  auto l2 = s.eval(std::span<const int32_t>(&next, 1));
  const std::vector<float> second(l2.begin(), l2.end());
  EXPECT_EQ(first, second);
  EXPECT_THROW(s.rewind(6), Error);
}

TEST(Session, KeepsTheCacheForTheSharedPrefixOfTheNextPrompt) {
  RAYO_REQUIRE_SHARED();
  Session s(stories(), small(32));
  const std::vector<int32_t> turn1 = {1, 403, 407, 261};
  s.eval(turn1);
  EXPECT_EQ(std::vector<int32_t>(s.tokens().begin(), s.tokens().end()), turn1);
  // The next turn repeats the first three tokens: they stay, the rest is evaluated.
  const std::vector<int32_t> turn2 = {1, 403, 407, 300, 301};
  EXPECT_EQ(s.keep_prefix(turn2), 3u);
  EXPECT_EQ(s.n_past(), 3);
  const auto logits = s.eval(std::span<const int32_t>(turn2).subspan(3));
  const std::vector<float> continued(logits.begin(), logits.end());
  Session fresh(stories(), small(32));
  const auto whole = fresh.eval(turn2);
  EXPECT_EQ(continued, std::vector<float>(whole.begin(), whole.end()));
  // A prompt the cache holds whole still leaves its last token to evaluate.
  EXPECT_EQ(s.keep_prefix(turn2), turn2.size() - 1);
  EXPECT_EQ(s.keep_prefix({}), 0u);
  EXPECT_TRUE(s.tokens().empty());
}

// Gemma 3's sliding-window layers keep only a ring of blocks (the window and a
// step's tokens) when that is smaller than the context: the logits are those of
// a session that keeps every position, through prompts in small chunks, decode
// steps, and rewinds the rings still cover and ones they no longer do.
TEST(Session, SlidingWindowLayersKeepOnlyTheirWindow) {
  const auto dir = test::temp_dir("session-rings");
  auto model = Model::load(test::write_synth_model(test::gemma3_synth_model("gemma3-tiny-f32"), dir).string());
  ASSERT_EQ(model->spec().sliding_window, 16u);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 100; ++i) tokens.push_back(6 + (i * 37 + 11) % 500);
  Session ring(model, small(256, 4)), full(model, small(256, 256));
  // A ring of ceil((16 + 4 - 1) / 16) = 2 blocks on 5 of the 6 layers; none when a step may write 256 positions.
  EXPECT_EQ(ring.kv_config().ring_blocks, 2);
  EXPECT_EQ(ring.kv_config().n_ring_blocks, 2);
  EXPECT_EQ(full.kv_config().ring_blocks, 0);
  EXPECT_EQ(6 * kv_block_bytes(ring.kv_config()), kv_block_bytes(full.kv_config()));

  auto expect_same = [](std::span<const float> a, std::span<const float> b, const char* what) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << what << ": logit " << i;
  };
  const std::vector<float> all = ring.eval_all(tokens);
  expect_same(all, full.eval_all(tokens), "prompt of 100 in steps of 4");
  for (int32_t t : {7, 300, 42}) expect_same(ring.eval({&t, 1}), full.eval({&t, 1}), "decode");
  // Back 3 positions: the rings still hold the window before it.
  ring.rewind(ring.n_past() - 3);
  full.rewind(full.n_past() - 3);
  const std::vector<int32_t> more = {9, 10, 11, 12, 13};
  expect_same(ring.eval(more), full.eval(more), "after a short rewind");
  // Back to 60: positions 45..59 were overwritten; the session evaluates 0..59 again.
  ring.rewind(60);
  full.rewind(60);
  EXPECT_EQ(ring.n_past(), 60);
  EXPECT_TRUE(std::equal(ring.tokens().begin(), ring.tokens().end(), tokens.begin()));
  expect_same(ring.eval(more), full.eval(more), "after a rewind past the rings");
  std::filesystem::remove_all(dir);
}

TEST(Session, RejectsBadOptionsAndTokens) {
  RAYO_REQUIRE_SHARED();
  auto model = stories();
  SessionOptions o = small(16);
  o.backend.n_threads = 100000;
  EXPECT_THROW(Session(model, o), Error);
  o = small(16);
  o.n_batch = 0;
  EXPECT_THROW(Session(model, o), Error);
  Session s(model, small(16));
  const std::vector<int32_t> bad = {1, 100000};
  EXPECT_THROW(s.eval(bad), Error);
  EXPECT_THROW(s.eval({}), Error);
}

}  // namespace
}  // namespace rayo::runtime
