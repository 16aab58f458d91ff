#pragma once
// A backend's parity on a shared model, teacher-forced: the prompt of the
// model's first reference case, then llama.cpp's greedy continuation, run
// through `tested` (in steps of up to max_tokens, every row asking for logits)
// and through `cpu` (one token a step), each row checked
//  - against llama.cpp's reference, as the CPU backend's own parity test does:
//    log-sum-exp and the recorded top logits within the project's tolerance,
//    the argmax wherever llama.cpp's own top-1/top-2 margin exceeds it;
//  - against the CPU backend: the tested backend's argmax no less than the
//    CPU's largest logit minus the tolerance (a near-tie at worst).
// Returns the largest logit difference from the CPU backend (the backends
// quantize activations differently: the CUDA kernels per 32 values, the CPU
// per 256 for k-quants, so each differs from llama.cpp in its own way).
#include <filesystem>
#include <string>
#include <vector>

#include "graph/executor.h"

namespace rayo::test {

// `reference`: llama.cpp's outputs for the model; empty: shared/reference/MODEL.json.
// `ring_start`: the sequence's ring, when the backends' KV caches keep rings.
double check_teacher_forced(const std::string& model_name, graph::Executor& tested, int64_t max_tokens,
                            graph::Executor& cpu, const std::vector<int32_t>& block_table, int n_tokens,
                            const std::filesystem::path& reference = {}, const std::vector<int32_t>& ring_start = {});

}  // namespace rayo::test
