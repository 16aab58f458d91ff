#include "audio/mel_filters.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace rayo::audio {

namespace {

// Slaney's mel scale (librosa's hz_to_mel/mel_to_hz with htk=False): 200/3 Hz per
// mel up to 1 kHz, then a constant ratio of 6.4^(1/27) per mel.
constexpr double kMelLinearHzPerMel = 200.0 / 3.0;
constexpr double kMelLogStartHz = 1000.0;
constexpr double kMelLogStartMel = kMelLogStartHz / kMelLinearHzPerMel;  // 15
const double kMelLogStep = std::log(6.4) / 27.0;

double hz_to_mel(double hz) {
  if (hz < kMelLogStartHz) return hz / kMelLinearHzPerMel;
  return kMelLogStartMel + std::log(hz / kMelLogStartHz) / kMelLogStep;
}

double mel_to_hz(double mel) {
  if (mel < kMelLogStartMel) return mel * kMelLinearHzPerMel;
  return kMelLogStartHz * std::exp(kMelLogStep * (mel - kMelLogStartMel));
}

}  // namespace

MelFilters slaney_mel_filters(int n_mels, int n_fft, int sample_rate) {
  RAYO_CHECK(n_mels > 0 && n_fft > 0 && sample_rate > 0);
  MelFilters f;
  f.n_mels = n_mels;
  f.n_bins = n_fft / 2 + 1;
  f.weights.assign(static_cast<size_t>(n_mels) * f.n_bins, 0.0f);
  f.first_bin.assign(n_mels, 0);
  f.last_bin.assign(n_mels, 0);

  // n_mels + 2 band edges evenly spaced in mels from 0 Hz to the Nyquist frequency.
  const double max_mel = hz_to_mel(sample_rate / 2.0);
  std::vector<double> edge_hz(n_mels + 2);
  for (int i = 0; i < n_mels + 2; ++i) edge_hz[i] = mel_to_hz(max_mel * i / (n_mels + 1));

  for (int m = 0; m < n_mels; ++m) {
    const double lo = edge_hz[m], center = edge_hz[m + 1], hi = edge_hz[m + 2];
    const double area_norm = 2.0 / (hi - lo);
    int first = f.n_bins, last = 0;
    for (int k = 0; k < f.n_bins; ++k) {
      const double hz = static_cast<double>(k) * sample_rate / n_fft;
      const double rising = (hz - lo) / (center - lo), falling = (hi - hz) / (hi - center);
      const double w = std::max(0.0, std::min(rising, falling)) * area_norm;
      if (w <= 0.0) continue;
      f.weights[static_cast<size_t>(m) * f.n_bins + k] = static_cast<float>(w);
      first = std::min(first, k);
      last = k + 1;
    }
    f.first_bin[m] = std::min(first, last);
    f.last_bin[m] = last;
  }
  return f;
}

}  // namespace rayo::audio
