#include "tools/bench_kernels.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "backends/cuda/cuda_backend.h"
#include "tools/kernel_bench.h"
#include "backends/cuda/weight_layout.h"
#include "common/error.h"
#include "tools/synth_model.h"

namespace rayo::tools {

void run_kernel_benchmark(const KernelBenchOptions& o) {
  using Path = tools::KernelBenchPath;
  if (o.reps < 1) fail("-r must be at least 1, got ", o.reps);
  std::vector<Path> paths;
  if (o.path == "auto")
    paths = {Path::Auto};
  else if (o.path == "gemv")
    paths = {Path::Gemv};
  else if (o.path == "gemm")
    paths = {Path::Gemm};
  else if (o.path == "int8")
    paths = {Path::Int8};
  else if (o.path == "exact")
    paths = {Path::Exact};
  else if (o.path == "both")
    paths = {Path::Gemv, Path::Gemm};
  else if (o.path == "all")
    paths = {Path::Gemv, Path::Gemm, Path::Int8, Path::Exact};
  else if (o.path == "dense")
    paths = {Path::Gemm, Path::DenseGemm, Path::Dense};
  else
    fail("--kernel-path must be auto, gemv, gemm, int8, exact, both, all or dense, got '", o.path, "'");
  const bool gemm_only = o.path == "gemm" || o.path == "int8" || o.path == "exact" || o.path == "dense";
  // The speed-up column: over the GEMV (both, all), or over the f16 tile (dense).
  const bool dense = o.path == "dense";
  std::vector<TensorType> types;
  if (o.types.empty()) {
    types = {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
             TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
             TensorType::IQ4_NL, TensorType::IQ4_XS, TensorType::F16, TensorType::BF16, TensorType::F32};
    if (gemm_only) std::erase_if(types, [](TensorType t) { return !cuda::has_gpu_layout(t); });
  } else {
    for (const auto& name : o.types) {
      const auto t = parse_tensor_type(name);
      if (!t) fail("unknown weight type '", name, "' (ggml names: q4_k, q6_k, f16, ...)");
      if (gemm_only && !cuda::has_gpu_layout(*t))
        fail("--kernel-path ", o.path, ": no tensor-core GEMM multiplies ", name, " weights");
      types.push_back(*t);
    }
  }
  std::vector<tools::SynthConfig> presets;
  for (const auto& p : o.presets) presets.push_back(tools::synth_preset(p));
  if (!cuda::cuda_available()) fail("--kernels times the CUDA kernels: ", cuda::cuda_unavailable_reason());

  for (int64_t t : o.tokens)
    if (t < 1 || t > 65536) fail("--tokens must be between 1 and 65536, got ", t);
  tools::KernelBench bench;
  const double copy = bench.copy_bandwidth(), peak = bench.dense_f16_peak();
  std::fprintf(stderr, "timing on %s (%s); a device-to-device copy moves %.1f GB/s (read + write); dense f16 "
               "tensor-core peak %.0f TFLOP/s\n", bench.device_name().c_str(), bench.arch().c_str(), copy / 1e9,
               peak / 1e12);
  nlohmann::json out = nlohmann::json::array();
  if (!o.json) {
    std::printf("| %-12s | %-12s | %6s | %15s | %6s | %6s | %10s | %12s | %9s | %8s | %9s | %7s |\n", "model", "matmul",
                "type", "rows x cols", "tokens", "kernel", "us/launch", "weights GB/s", "% of copy", "TFLOP/s",
                "% of peak", dense ? "vs gemm" : "vs gemv");
    std::printf("| %s | %s | ------ | --------------: | -----: | ------ | ---------: | -----------: | --------: | "
                "-------: | --------: | ------: |\n", std::string(12, '-').c_str(), std::string(12, '-').c_str());
  }
  for (size_t p = 0; p < presets.size(); ++p) {
    const auto& m = presets[p];
    const int64_t head_dim = m.effective_head_dim();
    for (int64_t tokens : o.tokens)
      for (TensorType t : types) {
        for (auto c : decoder_bench_cases(m.n_embd, m.n_ff, int64_t{m.n_head} * head_dim,
                                                int64_t{m.n_head_kv} * head_dim, m.n_vocab, t, tokens)) {
          if (c.cols % info(t).block_size != 0) continue;  // a shape the format cannot hold
          double base_seconds = 0;  // the first path's time (the GEMV's, or dense's f16 tile), for the others' rows
          for (Path path : paths) {
            if (path != Path::Gemv && path != Path::Auto && !cuda::has_gpu_layout(t)) continue;  // float: GEMVs only
            c.path = path;
            const auto r = bench.run(c, o.reps);
            const bool gemm = tools::kernel_bench_on_tensor_cores(c);
            const bool int8 =
                path == Path::Int8 || (path == Path::Auto && cuda::prompt_gemm_tile(t) == cuda::GemmTile::Int8);
            const char* kernel = !gemm                   ? "gemv"
                                 : path == Path::Exact     ? "exact"
                                 : path == Path::Dense     ? "dense"    // decode to f16 + dense GEMM
                                 : path == Path::DenseGemm ? "dense16"  // the dense GEMM on f16 weights
                                 : int8                    ? "int8"
                                                           : "gemm";
            const double gbs = static_cast<double>(r.weight_bytes) / r.seconds / 1e9;
            const double tflops = r.flops / r.seconds / 1e12;
            const double speedup = base_seconds > 0 ? base_seconds / r.seconds : 0.0;
            if (base_seconds == 0 && (!gemm || dense)) base_seconds = r.seconds;
            if (o.json) {
              nlohmann::json row = {{"model", o.presets[p]}, {"matmul", c.name}, {"type", type_name(t)},
                                    {"rows", c.rows}, {"cols", c.cols}, {"tokens", tokens},
                                    {"kernel", kernel}, {"seconds_per_launch", r.seconds},
                                    {"weight_bytes", r.weight_bytes}, {"weights_gb_per_s", gbs},
                                    {"copy_bandwidth", copy}, {"fraction_of_copy", copy > 0 ? gbs * 1e9 / copy : 0.0},
                                    {"tflop_per_s", tflops}, {"dense_f16_peak", peak},
                                    {"fraction_of_peak", peak > 0 ? tflops * 1e12 / peak : 0.0},
                                    {"weight_copies", r.copies}};
              if (speedup > 0) row[dense ? "speedup_over_gemm" : "speedup_over_gemv"] = speedup;
              out.push_back(row);
            } else {
              char shape[32], vs[16] = "";
              std::snprintf(shape, sizeof shape, "%lld x %lld", static_cast<long long>(c.rows),
                            static_cast<long long>(c.cols));
              if (speedup > 0) std::snprintf(vs, sizeof vs, "%.2fx", speedup);
              std::printf("| %-12s | %-12s | %6s | %15s | %6lld | %6s | %10.2f | %12.1f | %8.0f%% | %8.1f | %8.1f%% | "
                          "%7s |\n",
                          o.presets[p].c_str(), c.name.c_str(), std::string(type_name(t)).c_str(), shape,
                          static_cast<long long>(tokens), kernel, r.seconds * 1e6, gbs,
                          copy > 0 ? 100 * gbs * 1e9 / copy : 0.0, tflops, peak > 0 ? 100 * tflops * 1e12 / peak : 0.0,
                          vs);
              std::fflush(stdout);
            }
          }
        }
      }
  }
  if (o.json) std::printf("%s\n", out.dump(2).c_str());
}

}  // namespace rayo::tools
