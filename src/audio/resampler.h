#pragma once
// Streaming sample-rate conversion of one channel through libsoxr at its high
// quality setting (SOXR_HQ: 20-bit precision, a steep low-pass at the lower rate's
// Nyquist frequency), fed a block at a time so that memory stays bounded.
#include <span>
#include <vector>

struct soxr;  // libsoxr's handle, kept out of this header

namespace rayo::audio {

class Resampler {
 public:
  // Throws rayo::Error when libsoxr refuses the rates.
  Resampler(double input_rate, double output_rate);
  ~Resampler();
  Resampler(const Resampler&) = delete;
  Resampler& operator=(const Resampler&) = delete;

  // Resamples the next input block, appending what is ready to out. The filter's
  // delay holds back the last few samples until more input or flush().
  void process(std::span<const float> input, std::vector<float>& out);
  // Ends the input and appends the samples still held back.
  void flush(std::vector<float>& out);

 private:
  void run(const float* input, size_t length, std::vector<float>& out);
  soxr* soxr_ = nullptr;
  double ratio_ = 1.0;  // output rate / input rate
};

}  // namespace rayo::audio
