#pragma once
// whisper.cpp's model files as rayo runs them, and rayo's way of writing them.
//
// A ggml file holds openai-whisper's tensors under their PyTorch names; rayo
// runs CTranslate2's variables. Reading one builds, in memory, the model.bin a
// CTranslate2 converter would have written for the same weights (every
// variable of its WhisperSpec, Q/K/V fused, the key projections' missing bias
// as zeros), and the vocabulary and merges a CTranslate2 folder would hold
// (the file's ranked tokens in byte-level spelling, the merges that rebuild
// them, the special tokens whisper.cpp names from the vocabulary's size). So
// both kinds of file run through one model, one tokenizer and one decoder.
//
// Tensors stay in their type when it is f32 or f16, and so do the quantized
// matrices (Q4_0 ... Q8_0, the k-quants: linear weights and the token
// embedding, whose rows are whole blocks), which run as stored: a q5_0 model
// takes its file's size in memory, not four bytes a weight. A variable stacked
// from parts of different types (say Q, K, V quantized unlike each other)
// is dequantized to f32, exactly.
#include <cstdint>
#include <functional>
#include <string>

#include "quant/tensor_type.h"
#include "whisper/whisper_spec.h"

namespace rayo::whisper {

// Reads a whisper.cpp ggml file. Throws rayo::Error in one line: not a ggml
// file, a truncated or malformed one, sizes no Whisper model has, a missing
// or misshapen tensor.
WhisperFiles load_ggml_whisper(const std::string& path);

// Writes `files` (a loaded model) as a whisper.cpp ggml file, the way
// whisper.cpp's convert-pt-to-ggml.py and quantize write theirs: matrices in
// `type` (F16, F32, or a quantized type for the 2-D weights whose rows are
// whole blocks, as its quantize does), the convolution biases, positions and
// vectors in f32. `progress` gets (bytes of weights written, total). Returns
// the file's size.
using GgmlWriteProgress = std::function<void(uint64_t done, uint64_t total)>;
uint64_t write_ggml_whisper(const WhisperFiles& files, const std::string& path, TensorType type,
                            const GgmlWriteProgress& progress = {});

}  // namespace rayo::whisper
