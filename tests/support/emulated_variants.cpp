#include "support/emulated_variants.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "backends/cuda/dense_gemm_choice.h"
#include "gguf/file.h"
#include "graph/fusion_passes.h"
#include "graph/passes.h"
#include "models/architecture.h"
#include "models/model_spec.h"
#include "support/paths.h"
#include "support/scoped_env.h"
#include "support/synth_models.h"
#include "whisper/ct2_writer.h"
#include "whisper/ggml_whisper.h"
#include "whisper/whisper_loader.h"
#include "whisper/weight_store.h"
#include "whisper/whisper_graphs.h"
#include "whisper/whisper_presets.h"
#include "whisper/whisper_spec.h"

namespace rayo::test {

const std::vector<EmulatedModel>& emulated_models() {
  static const std::vector<EmulatedModel> models = [] {
    std::vector<EmulatedModel> m = {
      {"stories260K", 1, 1},         // float weights, head_dim 8: f32 path, statistics-only twins
      {"stories260K", 2, 2},         // the scheduler's buckets for 4 sequences and prompt chunks of 4
      {"stories260K", 4, 4},
      {"stories260K", 8, 4},
      {"synth-llama-q4_k_m", 1, 1},  // Q4_K + Q6_K, every producer writes its consumer's twin
      {"synth-llama-q4_k_m", 4, 4},  // token tiles
      {"synth-qwen2-q8_0", 1, 1},    // biases, NeoX rope, tied output
      {"synth-qwen3-q4_k_m", 1, 1},  // per-head q/k norms: unfused attention input, one twin for three matmuls
      {"synth-llama-q4_k_m", 32, 32},   // prompt graphs: the matmuls on tensor cores
      {"synth-qwen2-q8_0", 32, 32},
      {"synth-qwen3-q4_k_m", 32, 32},
      {"synth-llama-q4_k_m", 32, 32, true},  // --batch-invariant: the exact GEMMs
      {"synth-llama-q4_k_m", 16, 4, true},   // and its GEMVs of more than 8 rows: 8-token tiles
      // RAYO_PROMPT_GEMM=dense: prompt graphs' matmuls decoded to f16 and multiplied densely
      {"synth-llama-q4_k_m", cuda::kDenseGemmMinRows, cuda::kDenseGemmMinRows, false, true},
      {"synth-qwen2-q8_0", cuda::kDenseGemmMinRows, cuda::kDenseGemmMinRows, false, true},
    };
    // Gemma 3 (support/synth_models.h): scaled embeddings, GeGLU, sliding
    // windows in the split and the tensor-core attention, post-norms.
    for (const auto& g : gemma3_synth_models()) {
      m.push_back({g.name, 1, 1});
      m.push_back({g.name, 32, 32});
      // GeGLU in the dense GEMM's store, rings in rope_store_rows (the quantized ones).
      if (!g.name.ends_with("f32")) m.push_back({g.name, cuda::kDenseGemmMinRows, cuda::kDenseGemmMinRows, false, true});
    }
    // And every shared model's decode graph (EmulatedGpu.EverySharedModel...).
    for (const auto& name : every_shared_model()) m.push_back({name, 1, 1});
    return m;
  }();
  return models;
}

std::vector<std::string> every_shared_model() {
  std::vector<std::string> names;
  if (shared_dir().empty()) return names;
  for (const auto& e : std::filesystem::directory_iterator(shared_path("models")))
    if (e.path().extension() == ".gguf") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

gguf::File open_emulated_model(const std::string& name) {
  if (name.starts_with("gemma3-")) return open_synth_model(gemma3_synth_model(name));
  return gguf::File::open(shared_path("models/" + name + ".gguf").string());
}

cuda::KvShape emulated_kv_shape() { return cuda::KvShape{64, 16}; }

graph::KvCacheConfig emulated_kv_config(const models::ModelSpec& spec, int64_t max_tokens) {
  const cuda::KvShape shape = emulated_kv_shape();
  graph::KvCacheConfig kv{static_cast<int>(spec.n_layers), spec.kv_dim(), shape.block_size, 5, shape.max_seq_len,
                          graph::KvType::F16};
  if (spec.sliding_window > 0) {
    kv.ring_blocks = (spec.sliding_window + max_tokens - 1 + shape.block_size - 1) / shape.block_size;
    kv.n_ring_blocks = kv.ring_blocks + kEmulatedRingStart;
    for (uint32_t l = 0; l < spec.n_layers; ++l) kv.ring_layers.push_back(spec.is_sliding(l));
  }
  return kv;
}

const std::filesystem::path& emulated_whisper_folder() {
  static const std::filesystem::path folder = [] {
    whisper::WhisperPreset p = whisper::whisper_preset("tiny.en");
    p.n_state = 128;
    p.n_head = 2;
    p.n_layer = 2;
    p.n_audio_ctx = 32;
    p.alignment_heads.clear();
    const std::filesystem::path dir = temp_dir("emulated_whisper") / "model";
    whisper::write_ct2_whisper(p, 11, dir.string());
    return dir;
  }();
  return folder;
}

namespace {
// The graphs GraphWhisperRunner builds for the emulated model (its encoder's
// and its decoder steps' of up to 8 tokens), with the cache they run on.
void add_whisper_specs(std::vector<cuda::KernelSpec>& out, std::set<std::string>& seen) {
  const whisper::WhisperFiles files = whisper::load_ct2_whisper(emulated_whisper_folder().string());
  const whisper::WhisperSpec& s = files.spec;
  cuda::KvShape kv;
  kv.max_seq_len = s.n_text_ctx;
  kv.block_size = 16;
  kv.cross_len = s.n_audio_ctx;
  // The folder as stored and quantized at load, and written as a whisper.cpp q8_0 file (its blocks as stored).
  const std::filesystem::path dir = temp_dir("emulated_whisper_ggml_specs");
  whisper::write_ggml_whisper(files, (dir / "q8_0.bin").string(), TensorType::Q8_0);
  const whisper::WhisperFiles ggml = whisper::load_whisper((dir / "q8_0.bin").string());
  std::filesystem::remove_all(dir);
  const std::pair<const whisper::WhisperFiles*, whisper::WeightFormat> cases[] = {
      {&files, whisper::WeightFormat::AsStored}, {&files, whisper::WeightFormat::Int8},
      {&ggml, whisper::WeightFormat::AsStored}};
  for (const auto& [model, format] : cases) {
    const whisper::WeightStore weights(model->model, format, 1);
    graph::GraphConfig encoder{s.n_audio_ctx, 1};
    encoder.max_frames = 2 * int64_t{s.n_audio_ctx};
    const graph::GraphConfig decoder{8, kEmulatedWhisperSequences + 1};
    for (graph::Graph g : {whisper::build_encoder_graph(model->model, weights, s, encoder),
                           whisper::build_decoder_graph(model->model, weights, s, decoder)}) {
      graph::run_passes(g, graph::decoder_fusion_passes());
      for (const auto& spec : cuda::graph_kernel_specs(g, kv))
        if (seen.insert(spec.key()).second) out.push_back(spec);
    }
  }
}
}  // namespace

std::vector<tools::KernelBenchCase> emulated_kernel_bench_cases() {
  std::vector<tools::KernelBenchCase> cases;
  for (TensorType t : {TensorType::Q4_K, TensorType::F16})
    for (auto& c : tools::decoder_bench_cases(256, 512, 256, 64, 96, t)) cases.push_back(c);
  // A step of 40 tokens: the GEMVs' token tiles for F16, tensor cores for Q4_K.
  for (TensorType t : {TensorType::Q4_K, TensorType::F16})
    for (auto& c : tools::decoder_bench_cases(256, 512, 256, 64, 96, t, 40)) cases.push_back(c);
  // --kernel-path both: Q4_K's GEMVs at 40 tokens, its GEMMs at 1.
  for (auto c : tools::decoder_bench_cases(256, 512, 256, 64, 96, TensorType::Q4_K, 40)) {
    c.path = tools::KernelBenchPath::Gemv;
    cases.push_back(c);
  }
  for (auto c : tools::decoder_bench_cases(256, 512, 256, 64, 96, TensorType::Q4_K, 1)) {
    c.path = tools::KernelBenchPath::Gemm;
    cases.push_back(c);
  }
  // --kernel-path exact: Q4_K's exact GEMMs at 40 tokens.
  for (auto c : tools::decoder_bench_cases(256, 512, 256, 64, 96, TensorType::Q4_K, 40)) {
    c.path = tools::KernelBenchPath::Exact;
    cases.push_back(c);
  }
  // --kernel-path dense at 40 tokens: gate/up (two matrices) after Q4_K's
  // decode to f16, and attn_q's dense GEMM alone.
  for (auto c : tools::decoder_bench_cases(256, 512, 256, 64, 96, TensorType::Q4_K, 40)) {
    if (c.kind == tools::KernelBenchKind::GateUp) c.path = tools::KernelBenchPath::Dense;
    if (c.name == "attn_q") c.path = tools::KernelBenchPath::DenseGemm;
    if (c.path != tools::KernelBenchPath::Auto) cases.push_back(c);
  }
  return cases;
}

std::vector<cuda::KernelSpec> emulated_variant_specs() {
  std::vector<cuda::KernelSpec> out;
  std::set<std::string> seen;
  for (const auto& m : emulated_models()) {
    const auto file = open_emulated_model(m.name);
    const auto spec = models::ModelSpec::from_gguf(file);
    auto g = models::find_architecture(spec.arch).build(file, spec, graph::GraphConfig{m.max_tokens, m.max_outputs, m.batch_invariant});
    graph::run_passes(g, graph::decoder_fusion_passes());
    const ScopedEnv prompt_gemm("RAYO_PROMPT_GEMM", m.dense ? "dense" : nullptr);
    for (const auto& s : cuda::graph_kernel_specs(g, cuda::kv_shape(emulated_kv_config(spec, m.max_tokens))))
      if (seen.insert(s.key()).second) out.push_back(s);
  }
  {
    const auto file = open_emulated_model("stories260K");
    const auto spec = models::ModelSpec::from_gguf(file);
    auto g = models::find_architecture(spec.arch).build(file, spec, graph::GraphConfig{1, 1});
    graph::run_passes(g, graph::decoder_fusion_passes());
    for (const auto& s : cuda::graph_kernel_specs(g, cuda::KvShape{kEmulatedLongContext, 16}))
      if (seen.insert(s.key()).second) out.push_back(s);
  }
  for (const auto& c : emulated_kernel_bench_cases()) {
    const auto s = tools::kernel_bench_spec(c);
    if (seen.insert(s.key()).second) out.push_back(s);
    if (c.path == tools::KernelBenchPath::Dense) {  // its decode of each matrix to f16
      const auto d = cuda::dequant_spec(c.type, c.cols, {}, "dequant_f16");
      if (seen.insert(d.key()).second) out.push_back(d);
    }
  }
  add_whisper_specs(out, seen);
  return out;
}

std::string render_emulated_variants(const std::vector<cuda::KernelSpec>& specs) {
  std::string out =
      "// Generated by tests/support/emulated_variants.cpp: the kernel variants of the\n"
      "// graphs cuda_emulated_backend_test.cpp runs, compiled for the SIMT emulator.\n"
      "// Do not edit; the test EmulatedGpu.VariantsAreUpToDate says how to update it.\n\n";
  for (size_t i = 0; i < specs.size(); ++i) {
    for (const auto& [name, value] : specs[i].defines) out += "#define " + name + " " + value + "\n";
    out += "namespace variant_" + std::to_string(i) + " {\n#include \"backends/cuda/kernels/" + specs[i].file +
           "\"\n}\n#include \"support/simt/undef_shapes.h\"\n\n";
  }
  out += "#define EMULATED_KERNELS";
  for (size_t i = 0; i < specs.size(); ++i)
    for (const auto& entry : cuda::kernel_entries(specs[i].file))
      out += " \\\n  {\"" + specs[i].key() + "\", \"" + entry + "\", make_invoker(&variant_" + std::to_string(i) +
             "::" + entry + ")},";
  out += "\n";
  return out;
}

}  // namespace rayo::test
