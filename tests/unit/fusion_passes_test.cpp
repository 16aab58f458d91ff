// The fusion passes the CPU and CUDA backends request, on the decoder graphs of the
// shared models: which nodes they fuse, what the fused nodes carry, and that
// patterns they must not fuse (Qwen3's per-head norms) stay apart.
#include <gtest/gtest.h>

#include <map>

#include "gguf/file.h"
#include "graph/fusion_passes.h"
#include "models/architecture.h"
#include "models/model_spec.h"
#include "support/paths.h"

namespace rayo::graph {
namespace {

Graph build(const std::string& model, int64_t tokens = 1) {
  static std::map<std::string, std::unique_ptr<gguf::File>> files;  // weights point into the mapping
  auto& f = files[model];
  if (!f) f = std::make_unique<gguf::File>(gguf::File::open(test::shared_path("models/" + model).string()));
  const auto spec = models::ModelSpec::from_gguf(*f);
  return models::find_architecture(spec.arch).build(*f, spec, GraphConfig{tokens, 1});
}

std::map<Op, int> op_counts(const Graph& g) {
  std::map<Op, int> c;
  for (const auto& n : g.nodes()) ++c[n.op];
  return c;
}

TEST(FusionPasses, LlamaLayerBecomesFiveNodes) {
  RAYO_REQUIRE_SHARED();
  Graph g = build("synth-llama-q4_k_m.gguf");
  const size_t before = g.nodes().size();
  const int changes = run_passes(g, decoder_fusion_passes());
  auto c = op_counts(g);
  const int layers = 2;
  EXPECT_EQ(c[Op::QkvRopeStore], layers);
  EXPECT_EQ(c[Op::Attention], layers);
  EXPECT_EQ(c[Op::MatMulAdd], 2 * layers);
  EXPECT_EQ(c[Op::GateUpGlu], layers);
  EXPECT_EQ(c[Op::RmsNormMatMul], 1);  // output_norm + logits
  EXPECT_EQ(c[Op::Embed], 1);
  EXPECT_EQ(c[Op::SelectRows], 1);
  for (Op gone : {Op::RmsNorm, Op::MatMul, Op::Rope, Op::KvStore, Op::Add, Op::Glu, Op::AddBias})
    EXPECT_EQ(c[gone], 0) << op_name(gone);
  EXPECT_EQ(g.nodes().size(), 3u + 5u * layers);
  EXPECT_GT(changes, 0);
  EXPECT_LT(g.nodes().size(), before);
  EXPECT_GT(g.arena_bytes(), 0u);  // planned after the passes

  for (const auto& n : g.nodes()) {
    if (n.op == Op::QkvRopeStore) {
      EXPECT_NE(g.weights()[n.weight].name.find("attn_q.weight"), std::string::npos);
      EXPECT_NE(g.weights()[n.aux[1]].name.find("attn_k.weight"), std::string::npos);
      EXPECT_NE(g.weights()[n.aux[2]].name.find("attn_v.weight"), std::string::npos);
      ASSERT_GE(n.aux[0], 0);
      EXPECT_NE(g.weights()[n.aux[0]].name.find("attn_norm.weight"), std::string::npos);
      EXPECT_EQ(n.aux[3], -1);  // llama has no q/k/v biases
      EXPECT_EQ(n.n_head, 8);
      EXPECT_EQ(n.n_head_kv, 4);
      EXPECT_EQ(n.head_dim, 64);
      EXPECT_GT(n.eps, 0.0f);
    }
    if (n.op == Op::GateUpGlu) {
      EXPECT_NE(g.weights()[n.weight].name.find("ffn_gate"), std::string::npos);
      EXPECT_NE(g.weights()[n.aux[1]].name.find("ffn_up"), std::string::npos);
      ASSERT_GE(n.aux[0], 0);
      EXPECT_NE(g.weights()[n.aux[0]].name.find("ffn_norm"), std::string::npos);
    }
    if (n.op == Op::MatMulAdd) {
      const auto& name = g.weights()[n.weight].name;
      EXPECT_TRUE(name.find("attn_output") != std::string::npos || name.find("ffn_down") != std::string::npos) << name;
      EXPECT_GE(n.in[1], 0);  // the residual stream
    }
  }
}

TEST(FusionPasses, Qwen2BiasesGoIntoTheFusedAttentionInput) {
  RAYO_REQUIRE_SHARED();
  Graph g = build("synth-qwen2-q8_0.gguf");
  run_passes(g, decoder_fusion_passes());
  int fused = 0;
  for (const auto& n : g.nodes())
    if (n.op == Op::QkvRopeStore) {
      ++fused;
      ASSERT_GE(n.aux[3], 0);
      EXPECT_NE(g.weights()[n.aux[3]].name.find("attn_q.bias"), std::string::npos);
      EXPECT_NE(g.weights()[n.aux[4]].name.find("attn_k.bias"), std::string::npos);
      EXPECT_NE(g.weights()[n.aux[5]].name.find("attn_v.bias"), std::string::npos);
      EXPECT_EQ(n.rope.type, RopeType::NeoX);
    }
  EXPECT_EQ(fused, 2);
  EXPECT_EQ(op_counts(g)[Op::AddBias], 0);
}

TEST(FusionPasses, Qwen3PerHeadNormsKeepTheAttentionInputUnfused) {
  RAYO_REQUIRE_SHARED();
  Graph g = build("synth-qwen3-q8_0.gguf");
  run_passes(g, decoder_fusion_passes());
  auto c = op_counts(g);
  EXPECT_EQ(c[Op::QkvRopeStore], 0);
  EXPECT_EQ(c[Op::RmsNorm], 2 * 2);  // q_norm and k_norm of each layer (per head: not folded)
  EXPECT_EQ(c[Op::Rope], 2 * 2);
  EXPECT_EQ(c[Op::KvStore], 2);
  EXPECT_EQ(c[Op::RmsNormMatMul], 3 * 2 + 1);  // q, k, v read the folded attn_norm; and the logits
  EXPECT_EQ(c[Op::GateUpGlu], 2);
  EXPECT_EQ(c[Op::MatMulAdd], 4);
  for (const auto& n : g.nodes()) {
    if (n.op == Op::RmsNorm) {
      EXPECT_LT(n.group, g.values()[n.out].cols);
    }
  }
}

TEST(FusionPasses, PrefillGraphsFuseTheSameWay) {
  RAYO_REQUIRE_SHARED();
  Graph one = build("tinystories-656k-q8_0.gguf", 1), many = build("tinystories-656k-q8_0.gguf", 32);
  run_passes(one, decoder_fusion_passes());
  run_passes(many, decoder_fusion_passes());
  ASSERT_EQ(one.nodes().size(), many.nodes().size());
  for (size_t i = 0; i < one.nodes().size(); ++i) EXPECT_EQ(one.nodes()[i].op, many.nodes()[i].op) << i;
  // Tied output: the logits read the embedding matrix.
  EXPECT_EQ(one.weights()[one.nodes().back().weight].name, "token_embd.weight");
}

}  // namespace
}  // namespace rayo::graph
