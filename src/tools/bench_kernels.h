#pragma once
// rayo bench --kernels: each matmul kernel of a step timed alone on the GPU
// (tools/kernel_bench.h), per weight format, at the shapes of real
// models and for steps of 1 (decode) to thousands of tokens, against the
// device-to-device copy bandwidth measured in the same run (GB/s of weights)
// and the device's dense f16 tensor-core peak (TFLOP/s).
#include <string>
#include <vector>

namespace rayo::tools {

struct KernelBenchOptions {
  std::vector<std::string> presets = {"llama3-8b", "qwen2.5-1.5b"};  // rayo synth presets
  std::vector<std::string> types;  // ggml type names; empty: every format the GPU multiplies
  std::vector<int64_t> tokens = {1};  // token rows per matmul: 1 is decode; from 32, tensor cores
  // Which kernels: "auto" (a step's choice by the token count), "gemv",
  // "gemm" (tensor cores, quantized types), or "both" (each quantized case on
  // both, with the GEMM's speed-up: where the crossover lies).
  std::string path = "auto";
  int reps = 5;
  bool json = false;
};

void run_kernel_benchmark(const KernelBenchOptions& o);

}  // namespace rayo::tools
