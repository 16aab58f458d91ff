#pragma once
// The kernel variants the emulated-GPU backend test runs (the fused graphs of
// a few shared models), rendered as the C++ include file that compiles each
// variant for the SIMT emulator: per variant, its shape macros, the kernel
// source in a namespace of its own, and one registry entry per kernel entry
// point. The file is committed (tests/unit/cuda_emulated_backend_variants.inc);
// a test renders it again and fails when the kernel specs have changed, and
// tests/tools/print_emulated_variants.cpp prints the new one.
#include <filesystem>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "graph/backend.h"
#include "models/model_spec.h"
#include "tools/kernel_bench.h"
#include "backends/cuda/kernel_specs.h"

namespace rayo::test {

struct EmulatedModel {
  std::string name;     // shared model file name without .gguf, or a synthetic model's (open_emulated_model)
  int64_t max_tokens;   // graph bucket
  int64_t max_outputs;
  bool batch_invariant = false;
  bool dense = false;   // with RAYO_PROMPT_GEMM=dense: the dense GEMMs (dense_gemm_choice.h)
};

// Every model under shared/models, by name (empty without the shared data).
std::vector<std::string> every_shared_model();

// The models and graph buckets the backend test runs, with the KV cache it uses.
const std::vector<EmulatedModel>& emulated_models();
// A model of emulated_models() by name: a shared file, or a synthetic Gemma 3
// model made in memory ("gemma3-...", support/synth_models.h).
gguf::File open_emulated_model(const std::string& name);
cuda::KvShape emulated_kv_shape();
// stories260K's decode graph also runs with a context of this many positions
// (64 attention splits: EmulatedGpu.AttentionGridsGrowWithTheFurthestPosition).
constexpr int64_t kEmulatedLongContext = 4096;
// The KV cache the backend test gives a model's graphs of max_tokens rows:
// emulated_kv_shape's, and for sliding-window layers a ring for one sequence
// (window + max_tokens - 1 positions) that starts at block 1 of a pool of
// one block more (emulated_ring_start).
graph::KvCacheConfig emulated_kv_config(const models::ModelSpec& spec, int64_t max_tokens);
constexpr int32_t kEmulatedRingStart = 1;

// A small synthetic Whisper model for the emulated GPU: tiny.en's vocabulary
// and 80 mels, 2 encoder and 2 decoder layers of width 128 in 2 heads of 64,
// 32 encoder positions (64 mel frames). Its CTranslate2 folder is written at
// first use, into a temporary folder removed at exit.
const std::filesystem::path& emulated_whisper_folder();
// Sequences its test runners decode at once (GraphRunnerOptions::max_sequences).
constexpr int kEmulatedWhisperSequences = 4;

// The kernel benchmark's cases the backend test times (small shapes).
std::vector<tools::KernelBenchCase> emulated_kernel_bench_cases();

// Every variant of those graphs and benchmark cases, without duplicates, in a stable order.
std::vector<cuda::KernelSpec> emulated_variant_specs();

// The include file: the namespaces `variant_N` and the registry macro
// EMULATED_KERNELS ({key, entry, invoker} for each entry point).
std::string render_emulated_variants(const std::vector<cuda::KernelSpec>& specs);

}  // namespace rayo::test
