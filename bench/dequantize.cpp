// Throughput of the scalar reference dequantizers, one benchmark per format,
// and of the reference quantizers (the 8-bit ones quantize activations).
// bytes_per_second counts the quantized bytes read or written (what a weight
// stream costs), items_per_second the float values. A row of 64Ki values
// (quantized 36..256 KiB, floats 256 KiB) stays in L2, so this measures the
// conversion itself.
//
//   build/bench_dequantize [--benchmark_filter=Q4_K]
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "quant/tensor_type.h"

namespace {

using rayo::TensorType;

constexpr int64_t kRow = 64 * 1024;

void BM_DequantizeRow(benchmark::State& state, TensorType type) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> source(kRow);
  for (auto& v : source) v = dist(rng);
  const uint64_t bytes = rayo::row_bytes(type, kRow);
  std::vector<uint64_t> quantized((bytes + 7) / 8);  // aligned for every block type
  rayo::quant::quantize_row(type, source.data(), quantized.data(), kRow);
  std::vector<float> out(kRow);
  for (auto _ : state) {
    rayo::quant::dequantize_row(type, quantized.data(), out.data(), kRow);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kRow);
}

void BM_QuantizeRow(benchmark::State& state, TensorType type) {
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> source(kRow);
  for (auto& v : source) v = dist(rng);
  const uint64_t bytes = rayo::row_bytes(type, kRow);
  std::vector<uint64_t> quantized((bytes + 7) / 8);
  for (auto _ : state) {
    rayo::quant::quantize_row(type, source.data(), quantized.data(), kRow);
    benchmark::DoNotOptimize(quantized.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kRow);
}

#define RAYO_QUANT_BENCH(T) BENCHMARK_CAPTURE(BM_QuantizeRow, T, TensorType::T)
RAYO_QUANT_BENCH(Q4_0);
RAYO_QUANT_BENCH(Q4_1);
RAYO_QUANT_BENCH(Q5_0);
RAYO_QUANT_BENCH(Q5_1);
RAYO_QUANT_BENCH(Q8_0);
RAYO_QUANT_BENCH(Q8_1);
RAYO_QUANT_BENCH(Q2_K);
RAYO_QUANT_BENCH(Q3_K);
RAYO_QUANT_BENCH(Q4_K);
RAYO_QUANT_BENCH(Q5_K);
RAYO_QUANT_BENCH(Q6_K);
RAYO_QUANT_BENCH(Q8_K);

#define RAYO_DEQUANT_BENCH(T) BENCHMARK_CAPTURE(BM_DequantizeRow, T, TensorType::T)
RAYO_DEQUANT_BENCH(F32);
RAYO_DEQUANT_BENCH(F16);
RAYO_DEQUANT_BENCH(BF16);
RAYO_DEQUANT_BENCH(Q4_0);
RAYO_DEQUANT_BENCH(Q4_1);
RAYO_DEQUANT_BENCH(Q5_0);
RAYO_DEQUANT_BENCH(Q5_1);
RAYO_DEQUANT_BENCH(Q8_0);
RAYO_DEQUANT_BENCH(Q2_K);
RAYO_DEQUANT_BENCH(Q3_K);
RAYO_DEQUANT_BENCH(Q4_K);
RAYO_DEQUANT_BENCH(Q5_K);
RAYO_DEQUANT_BENCH(Q6_K);
RAYO_DEQUANT_BENCH(Q8_K);

}  // namespace

BENCHMARK_MAIN();
