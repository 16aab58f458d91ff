#include "backends/cuda/device_sampling.h"

#include <cmath>
#include <cstring>
#include <string>

#include "common/error.h"

namespace rayo::cuda {

KernelSpec sample_kernel_spec(int64_t n_vocab) {
  RAYO_CHECK(n_vocab >= 1 && n_vocab <= (int64_t{1} << 24), "vocabulary of ", n_vocab, " tokens");
  KernelSpec s{"sample.cu",
               "sample",
               {{"N_VOCAB", std::to_string(n_vocab)},
                {"K_MAX", std::to_string(kSampleMaxTopK)},
                {"SAMPLE_THREADS", std::to_string(kSampleThreads)}}};
  s.token_axis = 0;  // a block per output row
  s.block = kSampleThreads;
  return s;
}

bool device_can_sample(float temperature, int top_k, float top_p, float min_p) {
  return temperature <= 0.0f || (top_k >= 1 && top_k <= kSampleMaxTopK) ||
         (top_k == 0 && top_p >= 1.0f && min_p <= 0.0f);
}

namespace {

int32_t float_bits(float v) {
  int32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

}  // namespace

void pack_sampling_rows(std::span<const SamplingRowRequest> rows, int64_t n_vocab, PackedSamplingRows& out) {
  out.records.assign(rows.size() * kSampleRecordInts, 0);
  out.pairs.clear();
  out.on_host.assign(rows.size(), 0);
  out.host_rows = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    const SamplingRowRequest& q = rows[r];
    int32_t* rec = out.records.data() + r * kSampleRecordInts;
    if (!device_can_sample(q.temperature, q.top_k, q.top_p, q.min_p)) {
      out.on_host[r] = 1;
      ++out.host_rows;
      continue;  // mode 0: the kernel only writes -1
    }
    const bool greedy = q.temperature <= 0.0f;
    if (!greedy && !(q.u >= 0.0f && q.u < 1.0f)) fail("sampling row ", r, ": uniform number ", q.u, " is not in [0, 1)");
    rec[kSampleRecordMode] = 1;
    rec[kSampleRecordTemperature] = float_bits(q.temperature);
    rec[kSampleRecordTopK] = q.top_k;
    rec[kSampleRecordTopP] = float_bits(q.top_p);
    rec[kSampleRecordMinP] = float_bits(q.min_p);
    // The CPU adds std::log(min_p) (float) to the largest logit: the kernel
    // adds this very float, so the threshold is the same bit for bit.
    rec[kSampleRecordLogMinP] = float_bits(q.min_p > 0.0f ? std::log(q.min_p) : 0.0f);
    rec[kSampleRecordRepeatPenalty] = float_bits(q.repeat_penalty);
    rec[kSampleRecordPresencePenalty] = float_bits(q.presence_penalty);
    rec[kSampleRecordFrequencyPenalty] = float_bits(q.frequency_penalty);
    rec[kSampleRecordUniform] = float_bits(greedy ? 0.0f : q.u);
    const bool penalises = q.repeat_penalty != 1.0f || q.presence_penalty != 0.0f || q.frequency_penalty != 0.0f;
    const size_t first = out.pairs.size() / 2;
    if (penalises) {
      for (size_t j = 0; j < q.penalties.size(); ++j) {
        const TokenCount& e = q.penalties[j];
        if (j > 0 && !(q.penalties[j - 1].token < e.token))
          fail("sampling row ", r, ": penalty tokens must ascend, got ", q.penalties[j - 1].token, " then ", e.token);
        if (e.token < 0 || e.token >= n_vocab) continue;  // not in the vocabulary: no logit to penalise
        out.pairs.push_back(e.token);
        out.pairs.push_back(e.count);
      }
    }
    rec[kSampleRecordPenaltyOffset] = static_cast<int32_t>(first);
    rec[kSampleRecordPenaltyCount] = static_cast<int32_t>(out.pairs.size() / 2 - first);
  }
  if (out.pairs.empty()) out.pairs.assign(2, 0);  // a buffer to point at
}

}  // namespace rayo::cuda
