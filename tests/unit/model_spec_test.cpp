// ModelSpec: hyperparameters of the shared models as llama.cpp reads them.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "common/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "models/model_spec.h"
#include "support/paths.h"

namespace rayo::models {
namespace {

ModelSpec spec_of(const std::string& model) {
  const auto f = gguf::File::open(test::shared_path("models/" + model).string());
  return ModelSpec::from_gguf(f);
}

TEST(ModelSpec, SynthLlama) {
  RAYO_REQUIRE_SHARED();
  const ModelSpec s = spec_of("synth-llama-q4_k_m.gguf");
  EXPECT_EQ(s.arch, "llama");
  EXPECT_EQ(s.n_layers, 2u);
  EXPECT_EQ(s.n_embd, 512u);
  EXPECT_EQ(s.n_ff, 1536u);
  EXPECT_EQ(s.n_head, 8u);
  EXPECT_EQ(s.n_head_kv, 4u);
  EXPECT_EQ(s.head_dim, 64u);
  EXPECT_EQ(s.rope_dim, 64u);
  EXPECT_EQ(s.n_vocab, 512u);
  EXPECT_EQ(s.n_ctx_train, 4096u);
  EXPECT_FLOAT_EQ(s.rope_freq_base, 10000.0f);
  EXPECT_FLOAT_EQ(s.rms_eps, 1e-5f);
  EXPECT_EQ(s.rope_type, RopeType::Normal);
  EXPECT_FALSE(s.tied_output);
  EXPECT_FALSE(s.qkv_bias);
  EXPECT_FALSE(s.qk_norm);
  EXPECT_EQ(s.n_gqa(), 2u);
  EXPECT_EQ(s.kv_dim(), 256u);
}

TEST(ModelSpec, SynthQwen2HasBiasesAndTiedOutput) {
  RAYO_REQUIRE_SHARED();
  const ModelSpec s = spec_of("synth-qwen2-q8_0.gguf");
  EXPECT_EQ(s.arch, "qwen2");
  EXPECT_EQ(s.n_embd, 256u);
  EXPECT_EQ(s.n_head, 4u);
  EXPECT_EQ(s.n_head_kv, 1u);
  EXPECT_EQ(s.head_dim, 64u);
  EXPECT_EQ(s.n_vocab, 50257u);
  EXPECT_FLOAT_EQ(s.rope_freq_base, 1e6f);
  EXPECT_FLOAT_EQ(s.rms_eps, 1e-6f);
  EXPECT_EQ(s.rope_type, RopeType::NeoX);
  EXPECT_TRUE(s.tied_output);
  EXPECT_TRUE(s.qkv_bias);
  EXPECT_FALSE(s.qk_norm);
}

TEST(ModelSpec, SynthQwen3HasQkNorm) {
  RAYO_REQUIRE_SHARED();
  const ModelSpec s = spec_of("synth-qwen3-bf16.gguf");
  EXPECT_EQ(s.arch, "qwen3");
  EXPECT_EQ(s.n_head_kv, 2u);
  EXPECT_EQ(s.head_dim, 64u);
  EXPECT_EQ(s.n_ff, 1024u);
  EXPECT_EQ(s.rope_type, RopeType::NeoX);
  EXPECT_TRUE(s.qk_norm);
  EXPECT_FALSE(s.tied_output);
}

TEST(ModelSpec, TrainedTinyModels) {
  RAYO_REQUIRE_SHARED();
  const ModelSpec a = spec_of("stories260K.gguf");
  EXPECT_EQ(a.n_layers, 5u);
  EXPECT_EQ(a.n_embd, 64u);
  EXPECT_EQ(a.head_dim, 8u);
  EXPECT_EQ(a.n_ff, 172u);
  EXPECT_EQ(a.n_vocab, 512u);
  const ModelSpec b = spec_of("tinystories-656k-q8_0.gguf");
  EXPECT_EQ(b.n_embd, 128u);
  EXPECT_EQ(b.head_dim, 16u);
  EXPECT_EQ(b.n_vocab, 2048u);
  EXPECT_FLOAT_EQ(b.rms_eps, 1e-6f);
  EXPECT_TRUE(b.tied_output);
}

// A minimal model file with the given architecture and head counts, and any
// keys `extra` adds.
gguf::File make_file(const std::string& arch, uint32_t heads, uint32_t kv_heads, uint32_t vocab_rows,
                     const std::function<void(gguf::Writer&)>& extra = {}, uint32_t layers = 1) {
  gguf::Writer w;
  w.add_string("general.architecture", arch);
  if (extra) extra(w);
  w.add_u32(arch + ".block_count", layers);
  w.add_u32(arch + ".embedding_length", 64);
  w.add_u32(arch + ".feed_forward_length", 128);
  w.add_u32(arch + ".attention.head_count", heads);
  w.add_u32(arch + ".attention.head_count_kv", kv_heads);
  w.add_string_array("tokenizer.ggml.tokens", {"a", "b", "c", "d"});
  w.add_tensor("token_embd.weight", TensorType::F32, {64, vocab_rows});
  return gguf::File::from_bytes(w.write_bytes(std::vector<std::vector<uint8_t>>{
      std::vector<uint8_t>(64 * vocab_rows * 4)}), "m.gguf");
}

std::string error_of(const gguf::File& f) {
  try {
    (void)ModelSpec::from_gguf(f);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelSpec, RefusesWhatItCannotRun) {
  EXPECT_EQ(error_of(make_file("gpt-neox", 8, 8, 4)),
            "m.gguf: unsupported architecture 'gpt-neox' (supported: llama, qwen2, qwen3, gemma3)");
  EXPECT_EQ(error_of(make_file("llama", 8, 3, 4)), "m.gguf: 8 attention heads cannot be shared by 3 KV heads");
  EXPECT_EQ(error_of(make_file("llama", 8, 0, 4)), "m.gguf: key 'llama.attention.head_count_kv': 0 is not a valid size");
  EXPECT_EQ(error_of(make_file("llama", 8, 8, 5)),
            "m.gguf: tensor 'token_embd.weight' has 5 rows but the vocabulary has 4 tokens");
  EXPECT_EQ(error_of(make_file("llama", 8, 8, 4)), "");
}

// Gemma 3 as llama.cpp reads it (src/models/gemma3.cpp): five sliding layers in
// six unless the file says otherwise, the sliding layers' own rope base
// (10 000 by default), linear scaling on the others, √n_embd on the
// embeddings, and the attention scale of each size.
TEST(ModelSpec, Gemma3ReadsWindowsBasesAndScales) {
  auto base_keys = [](gguf::Writer& w) {
    w.add_u32("gemma3.attention.key_length", 16);
    w.add_u32("gemma3.attention.sliding_window", 512);
    w.add_f32("gemma3.rope.freq_base", 1e6f);
    w.add_string("gemma3.rope.scaling.type", "linear");
    w.add_f32("gemma3.rope.scaling.factor", 8.0f);
  };
  const ModelSpec s = ModelSpec::from_gguf(make_file("gemma3", 2, 1, 4, base_keys, 12));
  EXPECT_EQ(s.head_dim, 16u);
  EXPECT_EQ(s.rope_type, RopeType::NeoX);
  EXPECT_TRUE(s.qk_norm);
  EXPECT_TRUE(s.post_norms);
  EXPECT_EQ(s.ffn_act, graph::Activation::GeluTanh);
  EXPECT_FLOAT_EQ(s.embedding_scale, 8.0f);   // √64
  EXPECT_FLOAT_EQ(s.attention_scale, 0.25f);  // 1/√head_dim
  EXPECT_EQ(s.sliding_window, 512u);
  EXPECT_EQ(s.sliding_window_pattern, 6u);
  for (uint32_t l = 0; l < 12; ++l) EXPECT_EQ(s.is_sliding(l), l % 6 != 5) << "layer " << l;
  EXPECT_FLOAT_EQ(s.rope_freq_base, 1e6f);
  EXPECT_FLOAT_EQ(s.rope_freq_base_swa, 10000.0f);
  EXPECT_FLOAT_EQ(s.rope_freq_scale, 0.125f);

  // The 27B model (62 layers) scales by n_embd / n_head instead of the head size.
  EXPECT_FLOAT_EQ(ModelSpec::from_gguf(make_file("gemma3", 2, 1, 4, base_keys, 62)).attention_scale,
                  1.0f / std::sqrt(32.0f));

  const ModelSpec p = ModelSpec::from_gguf(make_file("gemma3", 2, 1, 4, [&](gguf::Writer& w) {
    base_keys(w);
    w.add_u32("gemma3.attention.sliding_window_pattern", 3);
    w.add_f32("gemma3.rope.freq_base_swa", 20000.0f);
  }, 6));
  EXPECT_TRUE(p.is_sliding(0) && p.is_sliding(1) && p.is_sliding(3) && p.is_sliding(4));
  EXPECT_FALSE(p.is_sliding(2) || p.is_sliding(5));
  EXPECT_FLOAT_EQ(p.rope_freq_base_swa, 20000.0f);

  // No window: every layer is full.
  const ModelSpec full = ModelSpec::from_gguf(make_file("gemma3", 2, 1, 4, {}, 6));
  for (uint32_t l = 0; l < 6; ++l) EXPECT_FALSE(full.is_sliding(l));
}

TEST(ModelSpec, Gemma3RefusesWhatItWouldGetWrong) {
  EXPECT_EQ(error_of(make_file("gemma3", 2, 1, 4, [](gguf::Writer& w) {
              w.add_f32("gemma3.final_logit_softcapping", 30.0f);
            })),
            "m.gguf: final logit soft-capping (30) is not supported");
  EXPECT_EQ(error_of(make_file("gemma3", 2, 1, 4, [](gguf::Writer& w) {
              w.add_u32("gemma3.attention.sliding_window", 8);
              w.add_i32_array("gemma3.attention.sliding_window_pattern", {1, 1, 0});
            })),
            "m.gguf: key 'gemma3.attention.sliding_window_pattern': a per-layer pattern is not supported (a period is)");
}

}  // namespace
}  // namespace rayo::models
