// The kernels compiled by NVRTC and run on the GPU, at production shapes,
// against the same references as the emulator tests (reference dequantizer and
// float64 dots; the CPU backend's attention). Skips when no GPU is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "backends/cpu/kv_cache.h"
#include "backends/cpu/ops.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/kernel_cache.h"
#include "backends/cuda/nvrtc.h"
#include "common/strings.h"
#include "support/native_gpu.h"
#include "support/require_gpu.h"
#include "backends/cuda/weight_layout.h"
#include "support/simt/byte_perm.h"
#include "support/simt/kernel_test_util.h"
#include "support/simt/q8_reference.h"

namespace rayo::cuda {
namespace {

using Gpu = test::NativeGpu;
using kargs::Dev;

// The matmul kernels' argument: weights, x and its twin, the norm weight, y,
// the residual (null: none); no twin of y.
kargs::MatmulArgs matmul_args(const DeviceBuffer& w, const DeviceBuffer& x, const DeviceBuffer& q,
                              const DeviceBuffer& ds, CUdeviceptr ss, CUdeviceptr norm_w, const DeviceBuffer& y,
                              CUdeviceptr res, const DeviceBuffer& n) {
  return kargs::MatmulArgs{.w = Dev{w.ptr()},
                           .x = Dev{x.ptr()},
                           .xt = {.q = Dev{q.ptr()}, .ds = Dev{ds.ptr()}, .ss = Dev{ss}},
                           .norm_w = Dev{norm_w},
                           .y = Dev{y.ptr()},
                           .epi = Dev{res},
                           .yt = {},
                           .y_norm_w = nullptr,
                           .n_rows = Dev{n.ptr()}};
}

// Every format at llama3-8b's width: quantized weights (in their GPU layout)
// times the q8 twin of x (the exact product of the dequantized twin, as the
// emulator test checks), float weights times x.
TEST(CudaKernelsNative, GemvEveryFormatAtLlamaWidth) {
  RAYO_REQUIRE_GPU();
  Gpu gpu;
  const int64_t K = 4096, M = 333;
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q4_0, TensorType::Q4_1,
                       TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0, TensorType::Q2_K, TensorType::Q3_K,
                       TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K, TensorType::IQ4_NL,
                       TensorType::IQ4_XS}) {
    SCOPED_TRACE(type_name(t));
    const bool quantized = has_gpu_layout(t);
    const auto w = test::random_weights(t, M, K, 1 + static_cast<uint32_t>(t));
    const auto wf = test::dequantized(t, w, M, K);
    const auto x = test::random_floats(K, 99);
    const auto twin = test::q8_twin(x.data(), 1, K);
    const std::vector<float> no_norm;
    auto dw = gpu.put(quantized ? test::gpu_matrix(t, w, M, K) : w), dx = gpu.put(x), dq = gpu.put(twin.q),
         dds = gpu.put(twin.ds), dy = gpu.put(std::vector<float>(M)), dn = gpu.put(std::vector<int>{1});
    gpu.run(gemv_spec(t, K, M, 1, -1.0f, 0), 1, matmul_args(dw, dx, dq, dds, 0, 0, dy, 0, dn));
    const auto y = gpu.get<float>(dy, M);
    const auto xs = test::matmul_input(x, no_norm, twin, 0, K, quantized, false, 0.0f);
    for (int64_t r = 0; r < M; ++r) {
      double ref = 0, abs_sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        ref += static_cast<double>(wf[r * K + k]) * xs[k];
        abs_sum += std::abs(static_cast<double>(wf[r * K + k]) * xs[k]);
      }
      // As the emulator test (fused multiply-adds only remove roundings).
      ASSERT_NEAR(y[r], ref, (K / 32.0 + 24) * test::kF32Eps * abs_sum) << "row " << r;
    }
  }
}

// The tensor-core GEMMs (the f16 and int8 tiles) of every quantized format at
// llama3-8b's width, 70 tokens (three token tiles, the last partial), against
// the product of the dequantized weights and the dequantized twin; the f16
// tile rounds both to f16 (2^-11 each, as the emulator test allows).
TEST(CudaKernelsNative, GemmEveryQuantizedFormatAtLlamaWidth) {
  RAYO_REQUIRE_GPU();
  Gpu gpu;
  const int64_t K = 4096, M = 333, T = 70;
  for (TensorType t : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
                       TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
                       TensorType::IQ4_NL, TensorType::IQ4_XS}) {
    SCOPED_TRACE(type_name(t));
    const auto w = test::random_weights(t, M, K, 11 + static_cast<uint32_t>(t));
    const auto wf = test::dequantized(t, w, M, K);
    const auto x = test::random_floats(T * K, 98);
    const auto twin = test::q8_twin(x.data(), T, K);
    const std::vector<float> no_norm;
    auto dw = gpu.put(test::gpu_matrix(t, w, M, K)), dx = gpu.put(x), dq = gpu.put(twin.q), dds = gpu.put(twin.ds),
         dn = gpu.put(std::vector<int>{static_cast<int>(T)});
    // The f16 tile rounds both factors to f16; the int8 tile's products are exact.
    for (GemmTile tile : {GemmTile::F16, GemmTile::Int8}) {
      SCOPED_TRACE(tile == GemmTile::F16 ? "f16 tile" : "int8 tile");
      auto dy = gpu.put(std::vector<float>(T * M));
      gpu.run(tensor_core_variant(gemv_spec(t, K, M, 4, -1.0f, 0), tile), T,
              matmul_args(dw, dx, dq, dds, 0, 0, dy, 0, dn));
      const auto y = gpu.get<float>(dy, T * M);
      const double rounding = tile == GemmTile::F16 ? 2.0 / 2048 : 0.0;
      for (int64_t tok = 0; tok < T; ++tok) {
        const auto xs = test::matmul_input(x, no_norm, twin, tok, K, true, false, 0.0f);
        for (int64_t r = 0; r < M; ++r) {
          double ref = 0, abs_sum = 0;
          for (int64_t k = 0; k < K; ++k) {
            ref += static_cast<double>(wf[r * K + k]) * xs[k];
            abs_sum += std::abs(static_cast<double>(wf[r * K + k]) * xs[k]);
          }
          ASSERT_NEAR(y[tok * M + r], ref, (rounding + (K / 16.0 + 16) * test::kF32Eps) * abs_sum)
              << "token " << tok << " row " << r;
        }
      }
    }
  }
}

// Prefill as decode where residuals are huge (rows of rms about 2e6 before the
// fused norm, past f16's 65 504): the f16 GEMM against the GEMV on the same
// inputs, at llama3-8b's width with a residual, within the GEMM's f16
// rounding of the normed activations (which the emulator test checks too).
TEST(CudaKernelsNative, GemmOnHugeResidualsThroughAFusedNormGivesWhatTheGemvGives) {
  RAYO_REQUIRE_GPU();
  Gpu gpu;
  const int64_t K = 4096, M = 333, T = 70;
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0}) {
    SCOPED_TRACE(type_name(t));
    const auto w = test::random_weights(t, M, K, 51 + static_cast<uint32_t>(t));
    const auto wf = test::dequantized(t, w, M, K);
    const auto x = test::random_floats(T * K, 94, 4e6f), nw = test::random_floats(K, 93),
               res = test::random_floats(T * M, 92);
    const auto twin = test::q8_twin(x.data(), T, K, nw.data());
    auto dw = gpu.put(test::gpu_matrix(t, w, M, K)), dx = gpu.put(x), dq = gpu.put(twin.q), dds = gpu.put(twin.ds),
         dss = gpu.put(twin.ss), dnw = gpu.put(nw), dres = gpu.put(res),
         dn = gpu.put(std::vector<int>{static_cast<int>(T)});
    const KernelSpec gemv = gemv_spec(t, K, M, 4, 1e-5f, 1);
    auto run = [&](bool gemm) {
      auto dy = gpu.put(std::vector<float>(T * M));
      const auto args = matmul_args(dw, dx, dq, dds, dss.ptr(), dnw.ptr(), dy, dres.ptr(), dn);
      gpu.run(gemm ? tensor_core_variant(gemv) : gemv, T, args);
      return gpu.get<float>(dy, T * M);
    };
    const auto by_gemv = run(false), by_gemm = run(true);
    for (int64_t tok = 0; tok < T; ++tok) {
      const auto xs = test::matmul_input(x, nw, twin, tok, K, true, true, 1e-5f);
      for (int64_t r = 0; r < M; ++r) {
        double abs_sum = 0;
        for (int64_t k = 0; k < K; ++k) abs_sum += std::abs(static_cast<double>(wf[r * K + k]) * xs[k]);
        const float v = by_gemm[tok * M + r];
        ASSERT_TRUE(std::isfinite(v)) << "token " << tok << " row " << r;
        ASSERT_NEAR(v, by_gemv[tok * M + r],
                    (2.0 / 2048 + (K / 8.0 + 32) * test::kF32Eps) * abs_sum + 8 * test::kF32Eps * std::abs(res[tok * M + r]))
            << "token " << tok << " row " << r;
      }
    }
  }
}

// The GEMV with token tiles of 1 and of 4, and the exact GEMM of
// batch-invariant graphs, of every quantized format at llama3-8b's width with
// a fused norm and a residual, 70 tokens: the same bits, which the emulator
// cannot show for the GPU's own float rounding (--fmad=false).
TEST(CudaKernelsNative, ExactGemmAndEveryTokenTileGiveTheSameBits) {
  RAYO_REQUIRE_GPU();
  Gpu gpu;
  const int64_t K = 4096, M = 333, T = 70;
  for (TensorType t : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
                       TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
                       TensorType::IQ4_NL, TensorType::IQ4_XS}) {
    SCOPED_TRACE(type_name(t));
    const auto w = test::random_weights(t, M, K, 31 + static_cast<uint32_t>(t));
    const auto x = test::random_floats(T * K, 97), nw = test::random_floats(K, 96), res = test::random_floats(T * M, 95);
    const auto twin = test::q8_twin(x.data(), T, K, nw.data());
    auto dw = gpu.put(test::gpu_matrix(t, w, M, K)), dx = gpu.put(x), dq = gpu.put(twin.q), dds = gpu.put(twin.ds),
         dss = gpu.put(twin.ss), dnw = gpu.put(nw), dres = gpu.put(res),
         dn = gpu.put(std::vector<int>{static_cast<int>(T)});
    auto run = [&](int tt, bool exact) {
      auto dy = gpu.put(std::vector<float>(T * M));
      const KernelSpec gemv = gemv_spec(t, K, M, tt, 1e-5f, 1);
      const auto args = matmul_args(dw, dx, dq, dds, dss.ptr(), dnw.ptr(), dy, dres.ptr(), dn);
      gpu.run(exact ? tensor_core_variant(gemv, GemmTile::Exact) : gemv, T, args);
      return gpu.get<float>(dy, T * M);
    };
    const auto one = run(1, false), four = run(4, false), exact = run(4, true);
    for (int64_t i = 0; i < T * M; ++i) {
      ASSERT_TRUE(std::isfinite(one[i])) << i;
      ASSERT_EQ(0, std::memcmp(&one[i], &four[i], 4)) << "token tile 4, token " << i / M << " row " << i % M;
      ASSERT_EQ(0, std::memcmp(&one[i], &exact[i], 4)) << "exact GEMM, token " << i / M << " row " << i % M;
    }
  }
}

// The GPU's __byte_perm, which the IQ4 formats' level lookups use, is the
// emulator's (support/simt/byte_perm.h), for selectors with bit 3 set (which
// PTX prmt alone would read as sign replication) and upper bits included.
TEST(CudaKernelsNative, BytePermIsTheEmulatorsPrmt) {
  RAYO_REQUIRE_GPU();
  Gpu gpu;
  const char* source =
      "extern \"C\" __global__ void byte_perm(const unsigned* in, unsigned* out, int n) {\n"
      "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) out[i] = __byte_perm(in[3 * i], in[3 * i + 1], in[3 * i + 2]);\n"
      "}\n";
  const auto compiled = Nvrtc::get().compile("byte_perm.cu", source, {}, {"--gpu-architecture=" + gpu.ctx.arch()});
  const DriverApi& api = gpu.ctx.api();
  CUmodule module = nullptr;
  check(api.cuModuleLoadData(&module, compiled.cubin.data()), "cuModuleLoadData");
  CUfunction f = nullptr;
  check(api.cuModuleGetFunction(&f, module, "byte_perm"), "byte_perm");
  // Every selector nibble value in every place, over random bytes; then random selectors.
  std::mt19937 rng(5);
  auto word = [&] { return static_cast<uint32_t>(rng()); };
  std::vector<uint32_t> in;
  for (uint32_t nib = 0; nib < 16; ++nib)
    for (int place = 0; place < 4; ++place)
      for (int k = 0; k < 8; ++k) {
        const uint32_t x = word(), y = word(), s = (word() & ~(0xFu << (4 * place))) | (nib << (4 * place));
        in.insert(in.end(), {x, y, s});
      }
  for (int k = 0; k < 4096; ++k) {
    const uint32_t x = word(), y = word(), s = word();
    in.insert(in.end(), {x, y, s});
  }
  const int n = static_cast<int>(in.size() / 3);
  auto din = gpu.put(in), dout = gpu.put(std::vector<uint32_t>(n));
  uint64_t args[] = {din.ptr(), dout.ptr(), static_cast<uint64_t>(n)};
  void* params[] = {&args[0], &args[1], &args[2]};
  gpu.ctx.launch(f, (n + 255) / 256, 1, 1, 256, params);
  const auto out = gpu.get<uint32_t>(dout, n);
  check(api.cuModuleUnload(module), "cuModuleUnload");
  int differ = 0;
  for (int i = 0; i < n; ++i) {
    const uint32_t want = simt::byte_perm(in[3 * i], in[3 * i + 1], in[3 * i + 2]);
    if (out[i] != want && ++differ <= 8)
      ADD_FAILURE() << std::hex << "x " << in[3 * i] << " y " << in[3 * i + 1] << " s " << in[3 * i + 2] << ": GPU "
                    << out[i] << ", emulator " << want;
  }
  EXPECT_EQ(differ, 0) << "of " << n;
}

// A CPU KV cache of ctx positions of random keys and values in blocks of 16,
// and one sequence over its blocks in reverse order (table), with copies of
// its keys and values for the GPU.
struct ReversedCache {
  cpu::KvCache cache;
  std::vector<int> table;
  std::vector<uint16_t> keys, values;
  int64_t blocks = 0;

  ReversedCache(int64_t kv_width, int64_t ctx, uint32_t seed) : blocks((ctx + 15) / 16) {
    cache.init(graph::KvCacheConfig{1, kv_width, 16, blocks, ctx, graph::KvType::F16});
    const auto kv = test::random_floats(2 * kv_width * blocks * 16, seed);
    for (int64_t r = 0; r < blocks * 16; ++r)
      cache.store(0, r, kv.data() + 2 * r * kv_width, kv.data() + (2 * r + 1) * kv_width);
    for (int64_t b = 0; b < blocks; ++b) table.push_back(static_cast<int>(blocks - 1 - b));
    keys.resize(blocks * 16 * kv_width);
    values.resize(blocks * 16 * kv_width);
    std::memcpy(keys.data(), cache.key_row(0, 0), keys.size() * 2);
    std::memcpy(values.data(), cache.value_row(0, 0), values.size() * 2);
  }
  // The cache row of the sequence's position j.
  int64_t row(int j) const { return static_cast<int64_t>(table[j / 16]) * 16 + j % 16; }
};

TEST(CudaKernelsNative, AttentionLongContextsAllGqaRatios) {
  RAYO_REQUIRE_GPU();
  Gpu gpu;
  struct Case { int hd, nh, nkv; };
  for (Case c : {Case{64, 8, 8}, Case{80, 8, 4}, Case{128, 32, 8}, Case{256, 8, 1}}) {
    SCOPED_TRACE(cat("head_dim ", c.hd, " heads ", c.nh, "/", c.nkv));
    const int64_t ctx = 3000, kvw = static_cast<int64_t>(c.nkv) * c.hd, qw = static_cast<int64_t>(c.nh) * c.hd;
    const ReversedCache rc(kvw, ctx, 5);
    const auto& [cache, table, kh, vh, blocks] = rc;
    const std::vector<int> seqs(5, 0);
    auto rows_of = [&](int pos) {
      std::vector<int64_t> r(pos + 1);
      for (int j = 0; j <= pos; ++j) r[j] = rc.row(j);
      return r;
    };
    const std::vector<int> positions = {2999, 0, 255, 256, 1234};
    const int rows = 5;
    const auto q = test::random_floats(rows * qw, 6, 2.0f);
    const int chunk = attention_chunk(ctx, 1, c.nh / c.nkv);
    const auto spec = attention_spec(c.nh, c.nkv, c.hd, ctx, 16, chunk);
    const int64_t splits = (ctx + chunk - 1) / chunk;
    auto dq = gpu.put(q), dk = gpu.put(kh), dv = gpu.put(vh), dp = gpu.put(positions), dn = gpu.put(std::vector<int>{rows});
    auto ds = gpu.put(seqs), dt = gpu.put(table), dmb = gpu.put(std::vector<int>{static_cast<int>(blocks)});
    auto part = gpu.put(std::vector<float>(rows * c.nh * splits * (c.hd + 2))), out = gpu.put(std::vector<float>(rows * qw));
    const int64_t n_counters = rows * c.nkv * attention_merge_counters(splits);
    auto counters = gpu.put(std::vector<int>(n_counters, 0));
    gpu.run(spec, rows,
            kargs::AttentionArgs{.q = Dev{dq.ptr()},
                                 .k_cache = Dev{dk.ptr()},
                                 .v_cache = Dev{dv.ptr()},
                                 .partial = Dev{part.ptr()},
                                 .counters = Dev{counters.ptr()},
                                 .out = Dev{out.ptr()},
                                 .out_q = nullptr,
                                 .out_ds = nullptr,
                                 .kv = {Dev{dp.ptr()}, Dev{ds.ptr()}, Dev{dt.ptr()}, Dev{dmb.ptr()}},
                                 .n_rows = Dev{dn.ptr()}});
    EXPECT_EQ(gpu.get<int>(counters, n_counters), std::vector<int>(n_counters, 0)) << "counters left set";
    const auto y = gpu.get<float>(out, rows * qw);
    std::vector<float> scores(ctx), ref(c.hd);
    for (int t = 0; t < rows; ++t)
      for (int h = 0; h < c.nh; ++h) {
        const auto cache_rows = rows_of(positions[t]);
        cpu::attention_head(cache, 0, h / (c.nh / c.nkv), c.hd, 1.0f / std::sqrt(static_cast<float>(c.hd)),
                            q.data() + t * qw + h * c.hd, 0, positions[t], cache_rows.data(), scores.data(), ref.data());
        // The error budget of the emulator test (cuda_emulated_ops_test.cpp):
        // score errors d move the output by at most 2d per side; the weighted
        // sums add a rounding per position of a warp's share and the merges.
        const float* qh = q.data() + t * qw + h * c.hd;
        double max_qk = 0;
        for (int j = 0; j <= positions[t]; ++j) {
          const uint16_t* kr = kh.data() + cache_rows[j] * kvw + (h / (c.nh / c.nkv)) * c.hd;
          double s = 0;
          for (int i = 0; i < c.hd; ++i) s += std::abs(qh[i] * fp16_to_fp32(kr[i]));
          max_qk = std::max(max_qk, s);
        }
        const double d = (c.hd / 32.0 + 7) * test::kF32Eps * max_qk / std::sqrt(static_cast<double>(c.hd));
        const double tol = 4 * d + (2.0 * (positions[t] / 4.0 + 8 + splits) + 16) * test::kF32Eps;
        for (int i = 0; i < c.hd; ++i) ASSERT_NEAR(y[t * qw + h * c.hd + i], ref[i], tol) << t << " " << h << " " << i;
      }
  }
}

// Prompt attention on tensor cores (attention_prefill.cu) at model shapes: a
// chunk of 150 prompt tokens (positions 2850..2999: 10 tiles of 16, the last
// partial) against a cached prefix of 2850, in a paged cache whose blocks run
// backwards; llama3-8b's, qwen2.5-1.5b's and an 8-to-1 grouping. Against the
// CPU backend's attention with the emulator test's budget
// (cuda_emulated_ops_test.cpp: f16 rounding of the scaled query and of the
// softmax weights).
TEST(CudaKernelsNative, PrefillAttentionOnTensorCoresAtModelShapes) {
  RAYO_REQUIRE_GPU();
  Gpu gpu;
  struct Case { int hd, nh, nkv; };
  for (Case c : {Case{128, 32, 8}, Case{128, 12, 2}, Case{64, 32, 4}}) {
    SCOPED_TRACE(cat("head_dim ", c.hd, " heads ", c.nh, "/", c.nkv));
    const int64_t ctx = 3000, kvw = static_cast<int64_t>(c.nkv) * c.hd, qw = static_cast<int64_t>(c.nh) * c.hd;
    const int group = c.nh / c.nkv;
    const ReversedCache rc(kvw, ctx, 15);
    const auto& [cache, table, kh, vh, blocks] = rc;
    const int rows = 150;
    std::vector<int> positions(rows), seqs(rows, 0);
    for (int t = 0; t < rows; ++t) positions[t] = static_cast<int>(ctx) - rows + t;
    const auto q = test::random_floats(rows * qw, 16, 2.0f);
    const auto spec = attention_prefill_spec(c.nh, c.nkv, c.hd, 16);
    auto dq = gpu.put(q), dk = gpu.put(kh), dv = gpu.put(vh), dp = gpu.put(positions), dn = gpu.put(std::vector<int>{rows});
    auto ds = gpu.put(seqs), dt = gpu.put(table), dmb = gpu.put(std::vector<int>{static_cast<int>(blocks)});
    auto out = gpu.put(std::vector<float>(rows * qw, NAN));
    gpu.run(spec, rows,
            kargs::AttentionArgs{.q = Dev{dq.ptr()},
                                 .k_cache = Dev{dk.ptr()},
                                 .v_cache = Dev{dv.ptr()},
                                 .partial = nullptr,
                                 .counters = nullptr,
                                 .out = Dev{out.ptr()},
                                 .out_q = nullptr,
                                 .out_ds = nullptr,
                                 .kv = {Dev{dp.ptr()}, Dev{ds.ptr()}, Dev{dt.ptr()}, Dev{dmb.ptr()}},
                                 .n_rows = Dev{dn.ptr()}});
    const auto y = gpu.get<float>(out, rows * qw);
    std::vector<float> scores(ctx), ref(c.hd);
    std::vector<int64_t> cache_rows(ctx);
    for (int j = 0; j < ctx; ++j) cache_rows[j] = rc.row(j);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.hd));
    for (int t = 0; t < rows; ++t)
      for (int h = 0; h < c.nh; ++h) {
        const float* qh = q.data() + t * qw + h * c.hd;
        cpu::attention_head(cache, 0, h / group, c.hd, 1.0f / std::sqrt(static_cast<float>(c.hd)), qh, 0, positions[t],
                            cache_rows.data(), scores.data(), ref.data());
        double max_qk = 0;
        for (int j = 0; j <= positions[t]; ++j) {
          const uint16_t* kr = kh.data() + cache_rows[j] * kvw + (h / group) * c.hd;
          double s = 0;
          for (int i = 0; i < c.hd; ++i) s += std::abs(qh[i] * fp16_to_fp32(kr[i]));
          max_qk = std::max(max_qk, s);
        }
        const double d = (1.0 / 2048 + (c.hd / 32.0 + 7) * test::kF32Eps) * max_qk * scale;
        const double tol = 4 * d + 2.0 / 2048 + (2.0 * (positions[t] / 4.0 + 8) + 16) * test::kF32Eps;
        for (int i = 0; i < c.hd; ++i) ASSERT_NEAR(y[t * qw + h * c.hd + i], ref[i], tol) << t << " " << h << " " << i;
      }
  }
}

}  // namespace
}  // namespace rayo::cuda
