// ModelSpec: hyperparameters of the shared models as llama.cpp reads them.
#include <gtest/gtest.h>

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

// A minimal model file with the given architecture and head counts.
gguf::File make_file(const std::string& arch, uint32_t heads, uint32_t kv_heads, uint32_t vocab_rows) {
  gguf::Writer w;
  w.add_string("general.architecture", arch);
  w.add_u32(arch + ".block_count", 1);
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
            "m.gguf: unsupported architecture 'gpt-neox' (supported: llama, qwen2, qwen3)");
  EXPECT_EQ(error_of(make_file("llama", 8, 3, 4)), "m.gguf: 8 attention heads cannot be shared by 3 KV heads");
  EXPECT_EQ(error_of(make_file("llama", 8, 0, 4)), "m.gguf: key 'llama.attention.head_count_kv': 0 is not a valid size");
  EXPECT_EQ(error_of(make_file("llama", 8, 8, 5)),
            "m.gguf: tensor 'token_embd.weight' has 5 rows but the vocabulary has 4 tokens");
  EXPECT_EQ(error_of(make_file("llama", 8, 8, 4)), "");
}

}  // namespace
}  // namespace rayo::models
