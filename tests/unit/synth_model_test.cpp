// rayo synth: synthetic models read back with the right shapes, metadata,
// quantization mix and sane weights, byte-identical for the same seed.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "common/error.h"
#include "gguf/file.h"
#include "gguf/summary.h"
#include "models/model_spec.h"
#include "quant/dequantize.h"
#include "support/paths.h"
#include "tokenizer/tokenizer.h"
#include "tools/synth_model.h"

namespace rayo::tools {
namespace {

using models::ModelSpec;
using models::RopeType;

const SynthFileType kAllTypes[] = {
    SynthFileType::F32,    SynthFileType::F16,    SynthFileType::BF16,   SynthFileType::Q8_0,   SynthFileType::Q4_0,
    SynthFileType::Q4_1,   SynthFileType::Q5_0,   SynthFileType::Q5_1,   SynthFileType::Q2_K,   SynthFileType::Q3_K_M,
    SynthFileType::Q4_K_S, SynthFileType::Q4_K_M, SynthFileType::Q5_K_S, SynthFileType::Q5_K_M, SynthFileType::Q6_K,
    SynthFileType::IQ4_NL, SynthFileType::IQ4_XS};

std::map<std::string, uint64_t> type_counts(const gguf::File& f) {
  std::map<std::string, uint64_t> out;
  for (const auto& u : gguf::type_usage(f)) out[std::string(type_name(u.type))] = u.tensors;
  return out;
}

TEST(Synth, TinyModelOfEveryArchAndTypeReadsBack) {
  for (const char* arch : {"llama", "qwen2", "qwen3"}) {
    for (SynthFileType t : kAllTypes) {
      SCOPED_TRACE(cat(arch, " ", synth_file_type_name(t)));
      const SynthConfig c = synth_preset("tiny", std::string_view(arch));
      const gguf::File f = gguf::File::from_bytes(synth_model_bytes(c, t, 7));
      const ModelSpec s = ModelSpec::from_gguf(f);
      EXPECT_EQ(s.arch, arch);
      EXPECT_EQ(s.n_layers, 2u);
      EXPECT_EQ(s.n_embd, 256u);
      EXPECT_EQ(s.n_ff, 768u);
      EXPECT_EQ(s.n_head, 4u);
      EXPECT_EQ(s.n_head_kv, 2u);
      EXPECT_EQ(s.head_dim, 64u);
      EXPECT_EQ(s.n_vocab, 512u);
      EXPECT_EQ(s.qkv_bias, std::string(arch) == "qwen2");
      EXPECT_EQ(s.qk_norm, std::string(arch) == "qwen3");
      EXPECT_EQ(s.tied_output, std::string(arch) == "qwen2");
      EXPECT_EQ(s.rope_type, std::string(arch) == "llama" ? RopeType::Normal : RopeType::NeoX);
      EXPECT_EQ(f.get<uint32_t>("general.file_type"), llama_ftype_id(t));
      const gguf::TokenizerSummary tok = gguf::tokenizer_summary(f);
      EXPECT_EQ(tok.model, "llama");
      EXPECT_EQ(tok.n_tokens, 512u);
      EXPECT_EQ(tok.has_chat_template, std::string(arch) != "llama");
      for (const auto& tensor : f.tensors()) {
        if (tensor.ne.size() == 1) {
          EXPECT_EQ(tensor.type, TensorType::F32) << tensor.name;
        }
      }
    }
  }
}

TEST(Synth, TokenizerLooksLikeSentencePiece) {
  const gguf::File f = gguf::File::from_bytes(synth_model_bytes(synth_preset("tiny", "qwen3"), SynthFileType::Q8_0, 1));
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  const auto types = f.get_int_array("tokenizer.ggml.token_type");
  const auto scores = f.get_float_array("tokenizer.ggml.scores");
  ASSERT_EQ(tokens.size(), 512u);
  ASSERT_EQ(types.size(), 512u);
  ASSERT_EQ(scores.size(), 512u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(types[0], 2);
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(tokens[3], "<|im_start|>");
  EXPECT_EQ(tokens[4], "<|im_end|>");
  EXPECT_EQ(types[4], 3);
  EXPECT_EQ(f.get<uint32_t>("tokenizer.ggml.eos_token_id"), 4u);
  EXPECT_EQ(tokens[5], "<0x00>");
  EXPECT_EQ(tokens[5 + 0x0A], "<0x0A>");
  EXPECT_EQ(tokens[5 + 255], "<0xFF>");
  EXPECT_EQ(types[5 + 255], 6);
  std::set<std::string_view> unique(tokens.begin(), tokens.end());
  EXPECT_EQ(unique.size(), tokens.size());
  EXPECT_TRUE(unique.count("\xe2\x96\x81the"));
  EXPECT_NE(f.get<std::string_view>("tokenizer.chat_template").find("<|im_start|>"), std::string_view::npos);
}

TEST(Synth, QuantizationMixFollowsLlamaCpp) {
  // Same mix as llama.cpp's Q4_K_M / Q5_K_M of the shared synth-llama files (2 layers).
  SynthConfig c = synth_preset("tiny", "llama");
  gguf::File q4 = gguf::File::from_bytes(synth_model_bytes(c, SynthFileType::Q4_K_M, 1));
  EXPECT_EQ(type_counts(q4), (std::map<std::string, uint64_t>{{"Q4_K", 13}, {"Q6_K", 3}, {"F32", 5}}));
  EXPECT_EQ(q4.tensor("output.weight").type, TensorType::Q6_K);
  EXPECT_EQ(q4.tensor("token_embd.weight").type, TensorType::Q4_K);
  EXPECT_EQ(q4.tensor("blk.1.attn_v.weight").type, TensorType::Q6_K);
  EXPECT_EQ(q4.tensor("blk.1.ffn_down.weight").type, TensorType::Q6_K);
  EXPECT_EQ(q4.tensor("blk.0.attn_v.weight").type, TensorType::Q4_K);
  gguf::File q5 = gguf::File::from_bytes(synth_model_bytes(c, SynthFileType::Q5_K_M, 1));
  EXPECT_EQ(type_counts(q5), (std::map<std::string, uint64_t>{{"Q5_K", 13}, {"Q6_K", 3}, {"F32", 5}}));
  gguf::File q40 = gguf::File::from_bytes(synth_model_bytes(c, SynthFileType::Q4_0, 1));
  EXPECT_EQ(type_counts(q40), (std::map<std::string, uint64_t>{{"Q4_0", 15}, {"Q6_K", 1}, {"F32", 5}}));
  gguf::File q80 = gguf::File::from_bytes(synth_model_bytes(c, SynthFileType::Q8_0, 1));
  EXPECT_EQ(type_counts(q80), (std::map<std::string, uint64_t>{{"Q8_0", 16}, {"F32", 5}}));
  // Tied output: token_embd takes the output's Q6_K.
  gguf::File qwen2 = gguf::File::from_bytes(synth_model_bytes(synth_preset("tiny", "qwen2"), SynthFileType::Q4_K_M, 1));
  EXPECT_EQ(qwen2.tensor("token_embd.weight").type, TensorType::Q6_K);
  EXPECT_EQ(qwen2.find_tensor("output.weight"), nullptr);
}

TEST(Synth, MixMatchesSharedLlamaCppFiles) {
  RAYO_REQUIRE_SHARED();
  // The shared synth-*-q4_k_m/q5_k_m files were quantized by llama.cpp: declare the
  // same shapes and compare every tensor's type.
  for (const char* name : {"synth-llama-q4_k_m", "synth-llama-q5_k_m", "synth-qwen3-q4_k_m", "synth-qwen3-q5_k_m",
                           "synth-qwen2-q4_k_m", "synth-llama-q4_0", "synth-qwen2-q8_0", "synth-llama-q4_1",
                           "synth-llama-q5_0", "synth-llama-q5_1", "synth-llama-q2_k", "synth-llama-q3_k_m"}) {
    SCOPED_TRACE(name);
    const gguf::File ref = gguf::File::open(test::shared_path(cat("models/", name, ".gguf")).string());
    const ModelSpec s = ModelSpec::from_gguf(ref);
    const std::string type_name_part = std::string(name).substr(std::string(name).rfind('-') + 1);
    const SynthFileType ft = parse_synth_file_type(type_name_part);
    for (const auto& t : ref.tensors()) {
      uint32_t layer = 0;
      if (starts_with(t.name, "blk.")) layer = static_cast<uint32_t>(std::stoul(std::string(t.name.substr(4))));
      EXPECT_EQ(synth_tensor_type(ft, t.name, layer, s.n_layers, t.ne[0], !s.tied_output, s.n_head / s.n_head_kv),
                t.type)
          << t.name;
    }
  }
}

TEST(Synth, KQuantFallbackForRowsNotMultipleOf256) {
  // Qwen2.5-0.5B has width 896: llama.cpp stores those rows as Q5_0 (Q4_K_M) and Q8_0 (Q6_K).
  EXPECT_EQ(synth_tensor_type(SynthFileType::Q4_K_M, "blk.0.attn_q.weight", 0, 24, 896, false), TensorType::Q5_0);
  EXPECT_EQ(synth_tensor_type(SynthFileType::Q5_K_M, "blk.0.attn_q.weight", 0, 24, 896, false), TensorType::Q5_1);
  EXPECT_EQ(synth_tensor_type(SynthFileType::Q4_K_M, "blk.0.attn_v.weight", 0, 24, 896, false), TensorType::Q8_0);
  EXPECT_EQ(synth_tensor_type(SynthFileType::Q4_K_M, "token_embd.weight", 0, 24, 896, false), TensorType::Q8_0);
  EXPECT_EQ(synth_tensor_type(SynthFileType::Q4_K_M, "blk.0.ffn_down.weight", 0, 24, 4864, false), TensorType::Q6_K);
  // 24 layers: more bits for layers 0-2, 21-23 and every third from 5.
  EXPECT_EQ(synth_tensor_type(SynthFileType::Q4_K_M, "blk.4.ffn_down.weight", 4, 24, 4864, false), TensorType::Q4_K);
  EXPECT_EQ(synth_tensor_type(SynthFileType::Q4_K_M, "blk.5.ffn_down.weight", 5, 24, 4864, false), TensorType::Q6_K);
  // The 32-value fallbacks of the other 256-value types, and the Q2_K mix with grouped-query attention.
  EXPECT_EQ(synth_tensor_type(SynthFileType::Q2_K, "blk.0.attn_q.weight", 0, 24, 896, false), TensorType::Q4_0);
  EXPECT_EQ(synth_tensor_type(SynthFileType::Q3_K_M, "blk.0.ffn_up.weight", 0, 24, 896, false), TensorType::Q4_0);
  EXPECT_EQ(synth_tensor_type(SynthFileType::IQ4_XS, "blk.0.attn_q.weight", 0, 24, 896, false), TensorType::IQ4_NL);
  EXPECT_EQ(synth_tensor_type(SynthFileType::Q2_K, "blk.0.attn_v.weight", 0, 24, 2048, false, 8), TensorType::Q4_K);
  EXPECT_EQ(synth_tensor_type(SynthFileType::Q2_K, "blk.0.attn_v.weight", 0, 24, 2048, false, 2), TensorType::Q3_K);
  EXPECT_TRUE(use_more_bits(2, 24));
  EXPECT_FALSE(use_more_bits(3, 24));
  EXPECT_TRUE(use_more_bits(8, 24));
  EXPECT_TRUE(use_more_bits(21, 24));
  // A narrow qwen2.5-0.5b-like model writes and reads back with that mix.
  SynthConfig c = synth_preset("qwen2.5-0.5b");
  c.n_layers = 2;
  c.n_vocab = 600;
  c.n_ff = 512;
  const gguf::File f = gguf::File::from_bytes(synth_model_bytes(c, SynthFileType::Q4_K_M, 3));
  EXPECT_EQ(f.tensor("blk.0.attn_q.weight").type, TensorType::Q5_0);
  EXPECT_EQ(f.tensor("token_embd.weight").type, TensorType::Q8_0);
  EXPECT_EQ(f.tensor("blk.0.ffn_down.weight").type, TensorType::Q4_K);  // ffn 512: whole blocks
  EXPECT_EQ(f.tensor("blk.1.attn_v.weight").type, TensorType::Q8_0);    // Q6_K on 896-wide rows
}

TEST(Synth, SameSeedSameBytes) {
  const SynthConfig c = synth_preset("tiny", "qwen3");
  const auto a = synth_model_bytes(c, SynthFileType::Q4_K_M, 123);
  const auto b = synth_model_bytes(c, SynthFileType::Q4_K_M, 123);
  const auto other = synth_model_bytes(c, SynthFileType::Q4_K_M, 124);
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), other.size());
  EXPECT_NE(a, other);
}

TEST(Synth, WeightsAreSmallAndNormsNearOne) {
  for (SynthFileType t : kAllTypes) {
    SCOPED_TRACE(synth_file_type_name(t));
    const gguf::File f = gguf::File::from_bytes(synth_model_bytes(synth_preset("tiny", "qwen2"), t, 9));
    for (const auto& tensor : f.tensors()) {
      std::vector<float> values(tensor.n_elements);
      quant::dequantize_row(tensor.type, tensor.data, values.data(), static_cast<int64_t>(tensor.n_elements));
      double sum = 0, sumsq = 0;
      for (float v : values) {
        ASSERT_TRUE(std::isfinite(v)) << tensor.name;
        sum += v;
        sumsq += double(v) * v;
      }
      const double n = static_cast<double>(values.size());
      const double mean = sum / n, sd = std::sqrt(std::max(0.0, sumsq / n - mean * mean));
      if (ends_with(tensor.name, "norm.weight")) {
        EXPECT_NEAR(mean, 1.0, 0.02) << tensor.name;
      } else if (ends_with(tensor.name, ".bias")) {
        EXPECT_LT(std::abs(mean), 0.01) << tensor.name;
      } else {
        EXPECT_LT(std::abs(mean), 0.004) << tensor.name;
        EXPECT_GT(sd, 0.01) << tensor.name;
        EXPECT_LT(sd, 0.04) << tensor.name;
      }
    }
  }
}

TEST(Synth, PresetsHaveTheRealModelsShapes) {
  const SynthConfig l3 = synth_preset("llama3-8b");
  EXPECT_EQ(l3.arch, "llama");
  EXPECT_EQ(l3.n_layers, 32u);
  EXPECT_EQ(l3.n_embd, 4096u);
  EXPECT_EQ(l3.n_ff, 14336u);
  EXPECT_EQ(l3.n_head_kv, 8u);
  EXPECT_EQ(l3.n_vocab, 128256u);
  EXPECT_FLOAT_EQ(l3.rope_freq_base, 500000.0f);
  const SynthConfig q3 = synth_preset("qwen3-0.6b");
  EXPECT_EQ(q3.effective_head_dim(), 128u);  // q width 2048 > model width 1024
  EXPECT_TRUE(q3.tied_output);
  EXPECT_TRUE(q3.qk_norm);
  EXPECT_TRUE(synth_preset("qwen2.5-1.5b").qkv_bias);
  EXPECT_FALSE(synth_preset("qwen2.5-7b").tied_output);
  EXPECT_EQ(synth_preset("tinyllama-1.1b").n_layers, 22u);
  // Headers are declared without writing any weights.
  for (auto name : {"llama3-8b", "qwen3-0.6b"}) {
    const gguf::Writer w = synth_writer(synth_preset(name), SynthFileType::Q4_K_M);
    EXPECT_GT(w.tensors().size(), 20u) << name;
  }
  EXPECT_NEAR(static_cast<double>(synth_writer(l3, SynthFileType::Q4_K_M).file_size()) / 1e9, 4.92, 0.1);
}

// Gemma 3: its sizes, its tensors (post-norms, q/k norms), its specials and
// chat template, and the window and rope keys rayo and llama.cpp read.
TEST(Synth, Gemma3HasItsShapesTensorsAndTokens) {
  const SynthConfig b1 = synth_preset("gemma3-1b");
  EXPECT_EQ(b1.arch, "gemma3");
  EXPECT_EQ(b1.n_layers, 26u);
  EXPECT_EQ(b1.n_embd, 1152u);
  EXPECT_EQ(b1.effective_head_dim(), 256u);
  EXPECT_EQ(b1.n_vocab, 262144u);
  EXPECT_EQ(b1.sliding_window, 512u);
  EXPECT_TRUE(b1.tied_output);
  EXPECT_EQ(synth_preset("gemma3-27b").effective_head_dim(), 128u);
  EXPECT_EQ(synth_preset("gemma3-12b").sliding_window, 1024u);
  EXPECT_FLOAT_EQ(synth_preset("gemma3-4b").rope_scaling_factor, 8.0f);
  EXPECT_EQ(synth_preset("gemma3-270m").n_layers, 18u);
  // gemma-3-1b-it Q4_K_M from llama.cpp's converter is about 0.8 GB.
  EXPECT_NEAR(static_cast<double>(synth_writer(b1, SynthFileType::Q4_K_M).file_size()) / 1e9, 0.8, 0.1);

  const gguf::File f = gguf::File::from_bytes(synth_model_bytes(synth_preset("tiny", "gemma3"), SynthFileType::Q8_0, 1));
  const ModelSpec s = ModelSpec::from_gguf(f);
  EXPECT_EQ(s.n_layers, 6u);
  EXPECT_EQ(s.sliding_window, 16u);
  EXPECT_TRUE(s.post_norms);
  EXPECT_TRUE(s.qk_norm);
  for (const char* t : {"blk.5.post_attention_norm.weight", "blk.5.post_ffw_norm.weight", "blk.0.attn_q_norm.weight"})
    EXPECT_NE(f.find_tensor(t), nullptr) << t;
  EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens[1], "<eos>");
  EXPECT_EQ(tokens[2], "<bos>");
  EXPECT_EQ(tokens[4], "<start_of_turn>");
  EXPECT_EQ(tokens[5], "<end_of_turn>");
  EXPECT_EQ(f.get<uint32_t>("tokenizer.ggml.bos_token_id"), 2u);
  EXPECT_TRUE(f.get<bool>("tokenizer.ggml.add_bos_token"));
  EXPECT_NE(f.get<std::string_view>("tokenizer.chat_template").find("<start_of_turn>model"), std::string_view::npos);
  EXPECT_FALSE(f.get<bool>("tokenizer.ggml.add_space_prefix"));  // as llama.cpp's converter writes Gemma 3's
  // A turn ends generation at <end_of_turn>, as at <eos>; the turn markers are single tokens.
  const auto tok = tokenizer::Tokenizer::from_gguf(f);
  EXPECT_TRUE(tok.is_eog(5));
  EXPECT_TRUE(tok.is_eog(1));
  EXPECT_FALSE(tok.is_eog(4));
  EXPECT_EQ(tok.encode("<start_of_turn>user\nhi<end_of_turn>", false, true).front(), 4);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Synth, RefusesBadOptions) {
  EXPECT_EQ(error_of([] { synth_preset("gpt-5"); }).rfind("unknown preset 'gpt-5' (choose from: tiny, ", 0), 0u);
  EXPECT_EQ(error_of([] { synth_preset("llama3-8b", "qwen2"); }), "preset 'llama3-8b' is a llama model, not qwen2");
  EXPECT_EQ(error_of([] { synth_preset("tiny", "mamba"); }), "unknown architecture 'mamba' (choose from: llama, qwen2, qwen3, gemma3)");
  EXPECT_EQ(error_of([] { parse_synth_file_type("q3_k"); }),
            "unknown type 'q3_k' (choose from: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k_m, q4_k_s, "
            "q4_k_m, q5_k_s, q5_k_m, q6_k, iq4_nl, iq4_xs)");
  SynthConfig c = synth_preset("tiny");
  c.n_head_kv = 3;
  EXPECT_EQ(error_of([&] { synth_writer(c, SynthFileType::F16); }), "4 heads cannot be shared by 3 KV heads");
  c = synth_preset("tiny");
  c.n_embd = 200;
  c.n_head = 4;
  EXPECT_EQ(error_of([&] { synth_writer(c, SynthFileType::Q8_0); }),
            "row length 200 is not a multiple of 32, which q8_0 needs");
  c = synth_preset("tiny");
  c.n_vocab = 100;
  EXPECT_EQ(error_of([&] { synth_writer(c, SynthFileType::F32); }),
            "vocabulary of 100 tokens is too small (at least 260)");
}

TEST(Synth, CommandWritesAFileInspectReads) {
  const auto dir = test::temp_dir("synth-cli");
  const std::string path = (dir / "m.gguf").string();
  const auto r = test::run_command(test::rayo_binary().string() + " synth --arch qwen3 --layers 3 --dim 512 --heads 8 " +
                                   "--kv-heads 2 --ffn 1024 --vocab 1000 --type q5_k_m --seed 5 -o " + path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const gguf::File f = gguf::File::open(path);
  const ModelSpec s = ModelSpec::from_gguf(f);
  EXPECT_EQ(s.n_layers, 3u);
  EXPECT_EQ(s.n_embd, 512u);
  EXPECT_EQ(s.n_head_kv, 2u);
  EXPECT_EQ(s.n_vocab, 1000u);
  const auto same = synth_model_bytes(
      [] {
        SynthConfig c = synth_preset("tiny", "qwen3");
        c.n_layers = 3, c.n_embd = 512, c.n_head = 8, c.n_head_kv = 2, c.n_ff = 1024, c.n_vocab = 1000;
        c.name = "custom qwen3 (synthetic)";
        return c;
      }(),
      SynthFileType::Q5_K_M, 5);
  ASSERT_EQ(f.file_size(), same.size());
  const auto bad = test::run_command(test::rayo_binary().string() + " synth --type q9 -o " + path);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("rayo: error: unknown type 'q9'"), std::string::npos) << bad.output;
  std::filesystem::remove_all(dir);
}

// rayo inspect on a Gemma 3 file: the window, which layers slide, both rope
// bases and the scaling; --json lists the sliding layers. Options that only
// Gemma 3 has are refused for other architectures.
TEST(Synth, InspectShowsGemma3Windows) {
  const auto dir = test::temp_dir("synth-gemma3");
  const std::string path = (dir / "g.gguf").string();
  const std::string rayo = test::rayo_binary().string();
  auto r = test::run_command(rayo + " synth --arch gemma3 --layers 7 --window 24 --rope-base-swa 20000 --rope-scaling 8 "
                                    "--type q8_0 -o " + path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_command(rayo + " inspect " + path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line : {"attention.sliding_window           24 positions",
                           "attention.sliding_window_pattern   6 (6 of 7 layers sliding)",
                           "rope.freq_base_swa                 20000", "rope.freq_base                     1e+06",
                           "rope.scaling.factor                8 (linear)", "FFN gate activation                GELU (tanh)"})
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  r = test::run_command(rayo + " inspect --json " + path, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(R"("sliding_layers":[0,1,2,3,4,6])"), std::string::npos) << r.output;
  r = test::run_command(rayo + " synth --arch qwen3 --window 8 -o " + path);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("are for --arch gemma3"), std::string::npos) << r.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rayo::tools
