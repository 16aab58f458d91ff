#pragma once
// The mel filter bank of Whisper's log-mel spectrogram: librosa's
// filters.mel(sr, n_fft, n_mels) with its defaults (Slaney's mel scale, linear
// below 1 kHz and logarithmic above, triangles from 0 Hz to sr / 2, each scaled
// to unit area: norm="slaney"). Whisper ships these as mel_filters.npz and
// faster-whisper recomputes them with the same formula; 80 bins for most models,
// 128 for large-v3.
#include <vector>

namespace rayo::audio {

struct MelFilters {
  int n_mels = 0;
  int n_bins = 0;             // n_fft / 2 + 1 frequency bins of the power spectrum
  std::vector<float> weights;  // [n_mels][n_bins], row-major
  // Each filter's nonzero bins, [first, last): a triangle spans a few bins only.
  std::vector<int> first_bin, last_bin;
};

MelFilters slaney_mel_filters(int n_mels, int n_fft, int sample_rate);

}  // namespace rayo::audio
