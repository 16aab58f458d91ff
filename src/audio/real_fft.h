#pragma once
// The power spectrum |X[k]|^2, k = 0 .. n/2, of a real frame of even length n,
// through kissfft's real-input transform (kiss_fftr).
#include <span>
#include <vector>

struct kiss_fftr_state;  // kissfft's plan, kept out of this header

namespace rayo::audio {

class RealFft {
 public:
  // Throws rayo::Error for an odd or non-positive n (kiss_fftr needs n even).
  explicit RealFft(int n);
  ~RealFft();
  RealFft(const RealFft&) = delete;
  RealFft& operator=(const RealFft&) = delete;

  int size() const { return n_; }
  // frame: n samples; power: n / 2 + 1 values.
  void power_spectrum(std::span<const float> frame, std::span<float> power);

 private:
  int n_ = 0;
  kiss_fftr_state* plan_ = nullptr;
  std::vector<float> spectrum_;  // n / 2 + 1 complex values as (re, im) pairs
};

}  // namespace rayo::audio
