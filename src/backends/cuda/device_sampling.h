#pragma once
// Sampling on the GPU (kernels/sample.cu): the kernel variant for a
// vocabulary, and the host's packing of each row's sampling request into the
// kernel's parameter records. The kernel computes runtime::sample_with_uniform
// (the CPU sampler's chain, given u and the penalty window), so a session
// that uploads what its runtime::Sampler would use (params, penalties(),
// next_uniform()) gets the token the CPU would have drawn. This layer does
// not include the runtime: the caller copies those fields into a
// graph::SampleRequest.
//
// Launch: sample_kernel_spec(n_vocab).launch(max rows) (grid (max_rows),
// block kSampleThreads); argument SampleArgs (kernels/kernel_args.cuh):
//   logits  [rows][n_vocab] f32
//   scratch [rows][n_vocab] f32   penalised copies (written only for rows with penalties)
//   records [rows][kSampleRecordInts] i32   (pack_sampling_rows)
//   pairs   [n][2] i32                      (pack_sampling_rows; >= 1 pair of storage)
//   ids     [rows] i32                      out: the token, or -1 where the host samples
//   n_rows  one i32                         rows of this step; blocks past it return
//
// The parameter record, kSampleRecordInts ints per row (floats bit-cast):
//    0 mode               0: the host samples this row (the kernel writes -1), 1: the kernel does
//    1 temperature   f32  <= 0: greedy
//    2 top_k         i32  1..kSampleMaxTopK (any value when greedy)
//    3 top_p         f32  1: off
//    4 min_p         f32  0: off
//    5 log(min_p)    f32  std::log(min_p) computed here, as the CPU sampler computes it (0 if off)
//    6 repeat_penalty     f32
//    7 presence_penalty   f32
//    8 frequency_penalty  f32
//    9 u             f32  the uniform number of the draw, in [0, 1)
//   10 penalty offset i32 the row's first (token, count) pair in `pairs` (in pairs, not ints)
//   11 penalty count  i32 0: no penalties
#include <cstdint>
#include <span>
#include <vector>

#include "backends/cuda/kernel_specs.h"
#include "graph/backend.h"

namespace rayo::cuda {

constexpr int kSampleMaxTopK = 1024;     // K_MAX: larger top_k (and top_k <= 0) rows are the host's
constexpr int kSampleThreads = 1024;     // the block size the kernel is compiled for
constexpr int kSampleRecordInts = 12;

// Field indices of the record (the table above; sample.cu's SR_* constants).
enum SampleRecordField : int {
  kSampleRecordMode = 0,
  kSampleRecordTemperature = 1,
  kSampleRecordTopK = 2,
  kSampleRecordTopP = 3,
  kSampleRecordMinP = 4,
  kSampleRecordLogMinP = 5,
  kSampleRecordRepeatPenalty = 6,
  kSampleRecordPresencePenalty = 7,
  kSampleRecordFrequencyPenalty = 8,
  kSampleRecordUniform = 9,
  kSampleRecordPenaltyOffset = 10,
  kSampleRecordPenaltyCount = 11,
};

// The kernel variant for a vocabulary of n_vocab tokens (1 .. 2^24).
KernelSpec sample_kernel_spec(int64_t n_vocab);

// One row's request (graph/backend.h): the fields of runtime::SamplingParams
// the chain reads, the window Sampler::penalties() returns and the u of
// Sampler::next_uniform() (any value when greedy: it is not used).
using TokenCount = graph::TokenCount;
using SamplingRowRequest = graph::SampleRequest;

// Whether the kernel can sample a row with these parameters: greedy
// (temperature <= 0, any top_k), 1 <= top_k <= kSampleMaxTopK, or every token
// in id order (top_k 0, top_p 1, min_p 0: OpenAI's defaults, which the CPU
// draws from without sorting). The others (top_k off with top-p or min-p, or
// top_k past kSampleMaxTopK) need the host, with the row's logits.
bool device_can_sample(float temperature, int top_k, float top_p, float min_p);

struct PackedSamplingRows {
  std::vector<int32_t> records;   // [rows][kSampleRecordInts]
  std::vector<int32_t> pairs;     // [pairs][2] (token, count); at least one pair of zeros
  std::vector<uint8_t> on_host;   // [rows] 1 where the host must sample (mode 0)
  int host_rows = 0;              // how many rows have on_host set
};

// Fills `out` (reusing its storage) for rows[0..n): the records, the pairs of
// every row's penalties one after another (only tokens in [0, n_vocab), only
// when a penalty parameter is set, as sample_with_uniform applies them), and
// which rows need the host. Throws rayo::Error on a u outside [0, 1) of a
// device row or penalties not in ascending token order.
void pack_sampling_rows(std::span<const SamplingRowRequest> rows, int64_t n_vocab, PackedSamplingRows& out);

}  // namespace rayo::cuda
