#pragma once
// The CPU implementations of the row ops encoder-decoder models (Whisper) add
// to the graph: LayerNorm with a bias, GELU with erf, and the unfolding of a
// kernel-3 convolution's input into rows that a matrix product can take.
#include <cstdint>

namespace rayo::cpu {

// y = (x - mean) / sqrt(var + eps) * w + b over the row (mean and variance in double).
void layer_norm_row(const float* x, const float* w, const float* b, float* y, int64_t cols, float eps);

// y = x / 2 * (1 + erf(x / sqrt 2)): the exact GELU of Whisper and BERT (not the tanh form).
void gelu_row(const float* x, float* y, int64_t n);

// sum_i e^(x_i - shift), accumulated in double: a log-softmax's normaliser over
// a vocabulary (Whisper's decoding takes one or more per token and row).
double sum_exp(const float* x, int64_t n, float shift);
// The largest of x[0 .. n) (-inf for none), vectorized.
float row_max(const float* x, int64_t n);
// The index of the first largest of x[0 .. n) (n > 0; std::max_element's),
// vectorized.
int64_t row_argmax(const float* x, int64_t n);

// x = softmax(x * scale) in place: e^(scale (x_i - max)) / sum.
void softmax_row(float* x, int64_t n, float scale);

// The input of a 1-D convolution of kernel 3 and padding 1, unfolded for output
// frame t: row[c * 3 + k] = in(c, t * stride + k - 1), zero outside 0 .. in_frames - 1,
// so that the convolution is this row times the weight [out][in][3] seen as a
// matrix [out][in * 3]. The input is frame-major (in(c, f) = in[f * channels + c])
// or, with channel_major, [channels][in_frames] (Whisper's log-mel).
void conv1d_unfold_row(const float* in, int64_t channels, int64_t in_frames, bool channel_major, int64_t t,
                       int stride, float* row);

}  // namespace rayo::cpu
