#pragma once
// `rayo bench -m WHISPER_MODEL` (a folder or a whisper.cpp file): the speed of a Whisper model's encoder (ms
// per 30-second window) and decoder (ms per token, alone and as beam search's
// five sequences a step).
#include <string>

#include "runtime/backend_choice.h"

namespace rayo::cli {

struct WhisperBenchOptions {
  std::string folder;  // the model: a CTranslate2 folder or a whisper.cpp file
  runtime::BackendChoice backend;
  std::string compute_type = "default";  // or int8 (whisper::WeightFormat)
  int n_tokens = 64;  // decoder tokens per repetition
  int reps = 3;
  bool json = false;
};

void run_whisper_bench(const WhisperBenchOptions& options);

}  // namespace rayo::cli
