// End to end on a real GPU: every shared model, teacher-forced over its
// reference prompt, on the CUDA backend and on the CPU backend side by side,
// plus the per-token traffic of a decode step (one upload, one graph launch,
// one download) and eager mode. Skips, saying why, when no GPU is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "backends/cpu/cpu_backend.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/dense_gemm_choice.h"
#include "common/error.h"
#include "gguf/file.h"
#include "graph/executor.h"
#include "models/architecture.h"
#include "models/model_spec.h"
#include "runtime/sampler.h"
#include "support/paths.h"
#include "support/reference.h"
#include "support/require_gpu.h"
#include "support/scoped_env.h"
#include "support/teacher_forced.h"

namespace rayo::cuda {
namespace {

struct Loaded {
  gguf::File file;
  models::ModelSpec spec;
  const models::Architecture* arch;
};

Loaded load(const std::string& name) {
  gguf::File f = gguf::File::open(test::shared_path("models/" + name + ".gguf").string());
  models::ModelSpec spec = models::ModelSpec::from_gguf(f);
  const auto* arch = &models::find_architecture(spec.arch);
  return Loaded{std::move(f), std::move(spec), arch};
}

graph::KvCacheConfig kv_config(const models::ModelSpec& s, int64_t n_ctx) {
  return graph::KvCacheConfig{static_cast<int>(s.n_layers), s.kv_dim(), 16, (n_ctx + 15) / 16, n_ctx,
                              graph::KvType::F16};
}

// One sequence whose blocks are the cache's blocks in reverse order (paging is
// exercised, not just the identity), for a context of n_ctx.
struct OneSequence {
  std::vector<int32_t> table, seq;
  explicit OneSequence(int64_t n_ctx) {
    const int64_t blocks = (n_ctx + 15) / 16;
    for (int64_t b = 0; b < blocks; ++b) table.push_back(static_cast<int32_t>(blocks - 1 - b));
    seq.assign(512, 0);
  }
  graph::StepInputs step(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                         std::span<const int32_t> rows, std::span<const graph::SampleRequest> sample = {}) const {
    return graph::StepInputs{tokens, positions, rows, std::span<const int32_t>(seq).first(tokens.size()), table,
                             static_cast<int32_t>(table.size()), sample};
  }
};

// Largest |a - b| over a row, and whether the argmaxes agree.
std::pair<double, bool> compare(std::span<const float> a, std::span<const float> b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(static_cast<double>(a[i]) - b[i]));
  const auto ia = std::max_element(a.begin(), a.end()) - a.begin();
  const auto ib = std::max_element(b.begin(), b.end()) - b.begin();
  return {d, ia == ib};
}

// Every shared model teacher-forced on the GPU, decode steps and a prompt graph
// (tensor cores), and a prompt graph of 128 rows on the dense GEMMs
// (RAYO_PROMPT_GEMM=dense), against llama.cpp's reference and the CPU backend
// (support/teacher_forced.h).
TEST(CudaModelParity, EverySharedModelTeacherForcedMatchesLlamaCppAndTheCpuBackend) {
  RAYO_REQUIRE_GPU();
  RAYO_REQUIRE_SHARED();
  int models = 0;
  for (const auto& name : test::reference_model_names()) {
    SCOPED_TRACE(name);
    Loaded m = load(name);
    const int64_t n_ctx = 256;
    const OneSequence one(n_ctx);
    for (int64_t max_tokens : {int64_t{1}, int64_t{64}, kDenseGemmMinRows}) {
      const test::ScopedEnv gemm("RAYO_PROMPT_GEMM", max_tokens == kDenseGemmMinRows ? "dense" : "tile");
      cpu::CpuBackend cpu(2);
      cpu.init_kv_cache(kv_config(m.spec, n_ctx));
      auto gpu = make_cuda_backend(CudaOptions{.progress = false});
      gpu->init_kv_cache(kv_config(m.spec, n_ctx));
      graph::Executor ec(cpu, m.arch->build(m.file, m.spec, graph::GraphConfig{1, 1}));
      graph::Executor eg(*gpu, m.arch->build(m.file, m.spec, graph::GraphConfig{max_tokens, max_tokens}));
      EXPECT_GT(eg.fused_nodes(), 0);
      const double worst = test::check_teacher_forced(name, eg, max_tokens, ec, one.table, 64);
      std::printf("%-24s max_tokens %3lld%s: largest logit difference from the CPU backend %.3f\n", name.c_str(),
                  static_cast<long long>(max_tokens), max_tokens == kDenseGemmMinRows ? " (dense)" : "", worst);
    }
    ++models;
  }
  EXPECT_GE(models, 20);
}

// synth-llama-q4_k_m's 512-token prompt in one step, each row's logits against
// the CPU backend's token by token.
void prefill_batch_matches_token_by_token() {
  Loaded m = load("synth-llama-q4_k_m");
  const int n = 512;
  auto gpu = make_cuda_backend(CudaOptions{.progress = false});
  gpu->init_kv_cache(kv_config(m.spec, n));
  graph::Executor batch(*gpu, m.arch->build(m.file, m.spec, graph::GraphConfig{n, n}));
  std::vector<int32_t> tokens(n), positions(n), rows(n);
  for (int i = 0; i < n; ++i) tokens[i] = (i * 37 + 1) % 512, positions[i] = i, rows[i] = i;
  const OneSequence seq(n);
  auto all = batch.step(seq.step(tokens, positions, rows));
  std::vector<float> batched(all.begin(), all.end());
  cpu::CpuBackend cpu(2);
  cpu.init_kv_cache(kv_config(m.spec, n));
  graph::Executor one(cpu, m.arch->build(m.file, m.spec, graph::GraphConfig{1, 1}));
  for (int i = 0; i < n; ++i) {
    const int32_t row = 0;
    auto l = one.step(seq.step({&tokens[i], 1}, {&positions[i], 1}, {&row, 1}));
    auto [d, same] = compare(l, std::span<const float>(batched).subspan(i * 512, 512));
    EXPECT_LE(d, test::logit_tolerance("synth-llama-q4_k_m")) << "token " << i;
  }
}

// A prompt of 512 tokens in one step (its matmuls on tensor cores: the f16
// tile, then the dense GEMM) against the CPU backend token by token: every
// row's logits within the tolerance.
TEST(CudaModelParity, PrefillBatchMatchesTokenByToken) {
  RAYO_REQUIRE_GPU();
  RAYO_REQUIRE_SHARED();
  for (const char* gemm : {"tile", "dense"}) {
    SCOPED_TRACE(gemm);
    const test::ScopedEnv prompt_gemm("RAYO_PROMPT_GEMM", gemm);
    prefill_batch_matches_token_by_token();
  }
}

TEST(CudaModelParity, DecodeStepIsOneUploadOneGraphLaunchOneDownload) {
  RAYO_REQUIRE_GPU();
  RAYO_REQUIRE_SHARED();
  Loaded m = load("synth-llama-q4_k_m");
  auto gpu = make_cuda_backend(CudaOptions{.progress = false});
  gpu->init_kv_cache(kv_config(m.spec, 64));
  graph::Executor ex(*gpu, m.arch->build(m.file, m.spec, graph::GraphConfig{1, 1}));
  const OneSequence seq(64);
  auto step = [&](int32_t pos) {
    const int32_t tok = 7, row = 0;
    return ex.step(seq.step({&tok, 1}, {&pos, 1}, {&row, 1}));
  };
  step(0);  // captures the graph
  const auto before = cuda_backend_info(*gpu).stats;
  for (int32_t p = 1; p <= 5; ++p) step(p);
  const auto after = cuda_backend_info(*gpu).stats;
  EXPECT_EQ(after.h2d - before.h2d, 5u);
  EXPECT_EQ(after.d2h - before.d2h, 5u);
  EXPECT_EQ(after.graph_launches - before.graph_launches, 5u);
  EXPECT_EQ(after.kernel_launches - before.kernel_launches, 0u);
  EXPECT_EQ(after.allocations - before.allocations, 0u);
  // The upload is the step block (step_block.h): 8 header ints, token,
  // position, output row, sequence index, its ring start (sliding-window
  // layers), its cross-attention slot (Whisper's decoder), the 12-int sampling
  // record and the 4-block table.
  EXPECT_EQ((after.h2d_bytes - before.h2d_bytes) / 5, (8 + 6 + 12 + 4) * sizeof(int32_t));
  // Without a sample request the step brings back the logits.
  EXPECT_EQ((after.d2h_bytes - before.d2h_bytes) / 5, 512 * sizeof(float));
  // A llama layer is 5 kernels (qkv, attention, out+residual, gate/up,
  // down+residual), plus embed, select_rows, the logits and the sampler.
  EXPECT_EQ(cuda_backend_info(*gpu).kernels_per_step, 5 * 2 + 4);

  // With a sample request (greedy, then the sampling chain with penalties):
  // one upload, one launch, and a download of the token alone, which is what
  // the CPU's sampler draws from the same logits.
  const std::vector<graph::TokenCount> window = {{7, 3}, {100, 1}};
  const std::vector<runtime::PenaltyEntry> entries = {{7, 3}, {100, 1}};
  for (float temperature : {0.0f, 0.8f}) {
    const graph::SampleRequest request{temperature, 40, 0.95f, 0.05f, 1.1f, 0.0f, 0.0f, window, 0.37f};
    const int32_t tok = 7, pos = temperature > 0 ? 7 : 6, row = 0;
    const auto a0 = cuda_backend_info(*gpu).stats;
    ex.run(seq.step({&tok, 1}, {&pos, 1}, {&row, 1}, {&request, 1}));
    const auto a1 = cuda_backend_info(*gpu).stats;
    EXPECT_EQ(a1.h2d - a0.h2d, 1u);
    EXPECT_EQ(a1.graph_launches - a0.graph_launches, 1u);
    EXPECT_EQ(a1.d2h - a0.d2h, 1u);
    EXPECT_EQ(a1.d2h_bytes - a0.d2h_bytes, sizeof(int32_t));
    runtime::SamplingParams p;
    p.temperature = temperature;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.repeat_penalty = 1.1f;
    EXPECT_EQ(ex.sampled()[0], runtime::sample_with_uniform(ex.logits(), p, entries, 0.37f)) << temperature;
  }
}

TEST(CudaModelParity, EagerModeMatchesGraphReplay) {
  RAYO_REQUIRE_GPU();
  RAYO_REQUIRE_SHARED();
  Loaded m = load("synth-qwen3-q4_k_m");
  auto graphed = make_cuda_backend(CudaOptions{.progress = false});
  auto eager = make_cuda_backend(CudaOptions{.use_graphs = false, .progress = false});
  graphed->init_kv_cache(kv_config(m.spec, 64));
  eager->init_kv_cache(kv_config(m.spec, 64));
  graph::Executor eg(*graphed, m.arch->build(m.file, m.spec, graph::GraphConfig{1, 1}));
  graph::Executor ee(*eager, m.arch->build(m.file, m.spec, graph::GraphConfig{1, 1}));
  const OneSequence seq(64);
  for (int32_t p = 0; p < 8; ++p) {
    const int32_t tok = (p * 31 + 3) % 512, row = 0;
    const graph::StepInputs in = seq.step({&tok, 1}, {&p, 1}, {&row, 1});
    auto a = eg.step(in);
    std::vector<float> av(a.begin(), a.end());
    auto b = ee.step(in);
    for (size_t i = 0; i < av.size(); ++i) ASSERT_EQ(av[i], b[i]) << "pos " << p << " logit " << i;  // same kernels
  }
  const auto info = cuda_backend_info(*eager);
  EXPECT_EQ(info.stats.graph_launches, 0u);
  EXPECT_GE(info.stats.kernel_launches, 8u * info.kernels_per_step);
}

TEST(CudaModelParity, BadInputsFailWithOneLine) {
  RAYO_REQUIRE_GPU();
  RAYO_REQUIRE_SHARED();
  Loaded m = load("stories260K");
  auto gpu = make_cuda_backend(CudaOptions{.progress = false});
  gpu->init_kv_cache(kv_config(m.spec, 16));
  graph::Executor ex(*gpu, m.arch->build(m.file, m.spec, graph::GraphConfig{1, 1}));
  const OneSequence seq(16);
  const int32_t bad_tok = 100000, pos = 0, row = 0, far = 16, ok_tok = 1;
  EXPECT_THROW(ex.step(seq.step({&bad_tok, 1}, {&pos, 1}, {&row, 1})), Error);
  EXPECT_THROW(ex.step(seq.step({&ok_tok, 1}, {&far, 1}, {&row, 1})), Error);
  graph::KvCacheConfig f32 = kv_config(m.spec, 16);
  f32.type = graph::KvType::F32;
  auto other = make_cuda_backend(CudaOptions{.progress = false});
  EXPECT_THROW(other->init_kv_cache(f32), Error);
}

}  // namespace
}  // namespace rayo::cuda
