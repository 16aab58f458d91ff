// Compiles every kernel variant the CUDA backend would launch for the shared
// models and for the llama3-8b and qwen2.5-1.5b shapes, with NVRTC, for sm_80
// and sm_90, and prints registers and spills per kernel (ptxas -v). NVRTC
// needs no GPU; the test skips only when NVRTC itself cannot be loaded.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "backends/cuda/kernel_specs.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/weight_layout.h"
#include "common/error.h"
#include "gguf/file.h"
#include "graph/fusion_passes.h"
#include "models/architecture.h"
#include "models/model_spec.h"
#include "support/nvrtc_compile.h"
#include "support/paths.h"
#include "tools/synth_model.h"
#include "support/real_model.h"
#include "whisper/weight_store.h"
#include "whisper/whisper_graphs.h"
#include "whisper/whisper_spec.h"

namespace rayo::cuda {
namespace {

DecoderShape llama3_8b() {
  DecoderShape s;
  s.n_embd = 4096;
  s.n_ff = 14336;
  s.n_vocab = 128256;
  s.n_head = 32;
  s.n_head_kv = 8;
  s.head_dim = 128;
  s.rope_base = 500000.0f;
  s.eps = 1e-5f;
  return s;
}

DecoderShape qwen25_1_5b() {
  DecoderShape s;
  s.n_embd = 1536;
  s.n_ff = 8960;
  s.n_vocab = 151936;
  s.n_head = 12;
  s.n_head_kv = 2;
  s.head_dim = 128;
  s.rope_base = 1e6f;
  s.eps = 1e-6f;
  s.neox = true;
  s.qkv_bias = true;
  return s;
}

using test::compile_all;

TEST(CudaNvrtcCompile, Llama3_8bAndQwen25ShapesCompileForSm80AndSm90) {
  RAYO_REQUIRE_NVRTC();
  std::set<std::string> done;
  for (const char* arch : {"sm_80", "sm_90"}) {
    compile_all("llama3", decoder_kernel_specs(llama3_8b()), arch, done);
    compile_all("qwen2.5", decoder_kernel_specs(qwen25_1_5b()), arch, done);
    // The dense f16 GEMM `rayo bench --kernels --kernel-path dense` times, at
    // llama3-8b's attention, gate/up and down shapes.
    compile_all("dense", {dense_gemm_spec(4096, 4096), dense_gemm_spec(14336, 4096), dense_gemm_spec(4096, 14336)},
                arch, done);
  }
}

// Gemma 3 1B's kernels at its widths: GeGLU gate/up, embeddings times √1152,
// attention of 256-wide heads over 512-position windows, kept in rings of
// cache blocks, at a 32K context (decode and prompt graphs of two layers).
TEST(CudaNvrtcCompile, Gemma3_1bShapesCompileForSm80AndSm90) {
  RAYO_REQUIRE_NVRTC();
  tools::SynthConfig c = tools::synth_preset("gemma3-1b");
  c.n_layers = 2;
  c.n_vocab = 512;
  const gguf::File file = gguf::File::from_bytes(tools::synth_model_bytes(c, tools::SynthFileType::Q4_K_M, 1));
  const auto spec = models::ModelSpec::from_gguf(file);
  std::vector<KernelSpec> specs;
  for (auto config : {graph::GraphConfig{1, 1}, graph::GraphConfig{64, 1}}) {
    graph::Graph g = models::find_architecture(spec.arch).build(file, spec, config);
    graph::run_passes(g, graph::decoder_fusion_passes());
    const KvShape kv{32768, 16, (512 + config.max_tokens - 1 + 15) / 16, {true, true}};
    for (auto& s : graph_kernel_specs(g, kv)) specs.push_back(s);
  }
  auto has = [&](const char* text) {
    return std::any_of(specs.begin(), specs.end(), [&](const KernelSpec& s) { return s.key().find(text) != std::string::npos; });
  };
  EXPECT_TRUE(has("GELU=1"));
  EXPECT_TRUE(has("WINDOW=512 RING_BLOCKS=32"));
  EXPECT_TRUE(has("EMBED_SCALE="));
  std::set<std::string> done;
  for (const char* arch : {"sm_80", "sm_90"}) compile_all("gemma3-1b", specs, arch, done);
}

TEST(CudaNvrtcCompile, EveryWeightFormatAndHeadDim) {
  RAYO_REQUIRE_NVRTC();
  std::set<std::string> done;
  const TensorType types[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q4_0, TensorType::Q4_1,
                              TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0, TensorType::Q2_K, TensorType::Q3_K,
                              TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K, TensorType::IQ4_NL,
                              TensorType::IQ4_XS};
  const Emit normed{true, true, true};
  for (const char* arch : {"sm_80", "sm_90"}) {
    std::vector<KernelSpec> specs;
    for (TensorType t : types) {
      specs.push_back(gemv_spec(t, 4096, 4096, 1, 1e-5f, 0));
      const bool quantized = has_gpu_layout(t);
      // Two K slices (decode, quantized), and tiles of 8 tokens
      // (RAYO_GEMV_TOKEN_TILE), of the fused q/k/v too (3 072 rows: sliced).
      if (quantized) specs.push_back(gemv_spec(t, 4096, 4096, 1, 1e-5f, 1, normed, gemv_slices(t, 4096, 1)));
      QkvShape qkv;
      qkv.q = qkv.k = qkv.v = t;
      qkv.cols = 2048;
      qkv.n_head = 16;
      qkv.n_head_kv = 4;
      qkv.head_dim = 128;
      qkv.rope.n_rot = 128;
      qkv.rope.freq_base = 500000.0f;
      qkv.norm_eps = 1e-5f;
      specs.push_back(qkv_rope_store_spec(qkv, 1, gemv_slices(t, qkv.rows(), 1)));
      specs.push_back(qkv_rope_store_spec(qkv, 8));
      specs.push_back(gemv_spec(t, 4096, 4096, 4, -1.0f, 1, quantized ? normed : Emit{false, false, true}));
      specs.push_back(gemv_spec(t, 4096, 4096, 8, -1.0f, 1, quantized ? normed : Emit{false, false, true}));
      specs.push_back(gemv_swiglu_spec(t, t, 4096, 14336, 8, 1e-5f, Emit{quantized, false, false}));
      specs.push_back(dequant_spec(t, 4096, quantized ? normed : Emit{}));
    }
    // The tensor-core GEMMs (every tile) of the formats no shared model
    // holds (the shared models' variants cover the others), for a matmul and
    // for gate/up (IQ4_XS beside Q4_K, whose unit shape it shares).
    for (TensorType t : {TensorType::IQ4_NL, TensorType::IQ4_XS})
      for (GemmTile tile : {GemmTile::F16, GemmTile::Int8, GemmTile::Exact}) {
        specs.push_back(tensor_core_variant(gemv_spec(t, 4096, 4096, 4, 1e-5f, 1, normed), tile));
        const TensorType up = t == TensorType::IQ4_XS ? TensorType::Q4_K : t;
        specs.push_back(
            tensor_core_variant(gemv_swiglu_spec(t, up, 4096, 14336, 4, 1e-5f, Emit{true, false, false}), tile));
      }
    specs.push_back(quantize_spec(4096, normed));
    specs.push_back(quantize_spec(4100, Emit{false, false, true}));
    for (int hd : {64, 80, 96, 128, 256})
      specs.push_back(attention_spec(32, 8, hd, 8192, 16, attention_chunk(8192, 1, 4), Emit{hd % 32 == 0}));
    // The longest contexts models declare and past them (GQA 8: 1 024 splits of
    // 512 positions at 512K, 2 048 splits of 1 024 at 2M; a weight per split
    // in shared memory passed its 48 KB static limit there).
    for (int64_t ctx : {int64_t{1} << 19, int64_t{1} << 21})
      for (int64_t rows : {int64_t{1}, int64_t{512}})
        specs.push_back(attention_spec(64, 8, 128, ctx, 16, attention_chunk(ctx, rows, 8), Emit{true}));
    // Prompt graphs: the split kernel beside the tensor-core one, whose output
    // accumulators (head_dim / 2 floats a lane) must fit without spilling;
    // 4, 7 and 8 query heads per kv head.
    for (int hd : {48, 64, 80, 96, 128}) {
      specs.push_back(attention_spec(32, 8, hd, 8192, 16, attention_chunk(8192, 512, 4), Emit{hd % 32 == 0}, true));
      specs.push_back(attention_prefill_spec(32, 8, hd, 16, Emit{hd % 32 == 0}));
    }
    specs.push_back(attention_prefill_spec(28, 4, 128, 16, Emit{true}));
    specs.push_back(attention_prefill_spec(32, 4, 128, 16, Emit{true}));
    compile_all("formats", specs, arch, done);
  }
}

// The kernels of encoder-decoder models (Whisper tiny's and large-v3's widths,
// the feed-forward's for GELU, attention over 1500 frames).
TEST(CudaNvrtcCompile, WhisperRowKernelsCompileForSm80AndSm90) {
  RAYO_REQUIRE_NVRTC();
  std::set<std::string> done;
  for (const char* arch : {"sm_80", "sm_90"}) {
    std::vector<KernelSpec> specs;
    for (int64_t width : {384, 1280}) {
      specs.push_back(layer_norm_spec(width, 1e-5f));
      specs.push_back(elementwise_spec(width, {}, "add_position"));
      specs.push_back(elementwise_spec(4 * width, {}, "gelu"));
      for (const char* entry : {"dense_attention", "cross_kv_store", "cross_attention"})
        specs.push_back(encoder_decoder_attention_spec(entry, static_cast<int>(width / 64), 64, 1500, 1500, 0.125f));
      specs.push_back(conv1d_unfold_spec(width, 2, false));
    }
    for (int64_t mels : {80, 128}) specs.push_back(conv1d_unfold_spec(mels, 1, true));
    compile_all("whisper rows", specs, arch, done);
  }
}

// Every kernel the real Whisper tiny.en's graphs launch (the encoder of 1500
// positions, decoder steps of up to 8 tokens for 5 beams), its weights as
// stored (f16) and quantized at load (int8), for sm_90.
TEST(CudaNvrtcCompile, WhisperTinyEnGraphsCompileForSm90) {
  RAYO_REQUIRE_NVRTC();
  if (const std::string why = test::real_whisper_absent(); !why.empty()) GTEST_SKIP() << why;
  const whisper::WhisperFiles files = whisper::load_ct2_whisper(test::real_whisper_dir().string());
  const whisper::WhisperSpec& s = files.spec;
  KvShape kv;
  kv.max_seq_len = s.n_text_ctx;
  kv.cross_len = s.n_audio_ctx;
  std::vector<KernelSpec> specs;
  for (auto format : {whisper::WeightFormat::AsStored, whisper::WeightFormat::Int8}) {
    const whisper::WeightStore weights(files.model, format, 2);
    graph::GraphConfig encoder{s.n_audio_ctx, 1};
    encoder.max_frames = 2 * int64_t{s.n_audio_ctx};
    for (graph::Graph g : {whisper::build_encoder_graph(files.model, weights, s, encoder),
                           whisper::build_decoder_graph(files.model, weights, s, graph::GraphConfig{8, 6})}) {
      graph::run_passes(g, graph::decoder_fusion_passes());
      for (auto& spec : graph_kernel_specs(g, kv)) specs.push_back(spec);
    }
  }
  std::set<std::string> done;
  compile_all("whisper tiny.en", specs, "sm_90", done);
}

// Every shared model's decode and prefill variants for sm_90 (the same
// variants for sm_80 are compiled by the slow-labelled twin of this test,
// tests/slow/cuda_nvrtc_compile_sm80_test.cpp: together they take minutes).
TEST(CudaNvrtcCompile, SharedModelsCompileForSm90) {
  RAYO_REQUIRE_NVRTC();
  RAYO_REQUIRE_SHARED();
  test::compile_shared_models("sm_90");
}

TEST(CudaNvrtcCompile, BadSourceFailsWithOneLine) {
  RAYO_REQUIRE_NVRTC();
  try {
    Nvrtc::get().compile("bad.cu", "extern \"C\" __global__ void k() { undefined_thing(); }", {},
                         {"--gpu-architecture=sm_90"});
    FAIL() << "compiled an invalid kernel";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("bad.cu"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace rayo::cuda
