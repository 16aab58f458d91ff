#include "audio/real_fft.h"

#include <kiss_fftr.h>

#include "common/error.h"

namespace rayo::audio {

static_assert(sizeof(kiss_fft_cpx) == 2 * sizeof(float), "kissfft must be the float build (kissfft-float)");

RealFft::RealFft(int n) : n_(n), spectrum_(static_cast<size_t>(n / 2 + 1) * 2) {
  if (n <= 0 || n % 2 != 0) fail("real FFT length must be even and positive, got ", n);
  plan_ = kiss_fftr_alloc(n, 0, nullptr, nullptr);
  if (!plan_) fail("cannot allocate a real FFT of length ", n);
}

RealFft::~RealFft() {
  if (plan_) kiss_fftr_free(plan_);
}

void RealFft::power_spectrum(std::span<const float> frame, std::span<float> power) {
  RAYO_CHECK(frame.size() == static_cast<size_t>(n_) && power.size() == static_cast<size_t>(n_ / 2 + 1));
  auto* bins = reinterpret_cast<kiss_fft_cpx*>(spectrum_.data());
  kiss_fftr(plan_, frame.data(), bins);
  for (size_t k = 0; k < power.size(); ++k) power[k] = bins[k].r * bins[k].r + bins[k].i * bins[k].i;
}

}  // namespace rayo::audio
