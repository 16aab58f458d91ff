#include "audio/log_mel.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "audio/audio_stream.h"
#include "common/error.h"

namespace rayo::audio {

namespace {

// faster-whisper appends one hop of zeros before the STFT (and drops the last frame).
constexpr int64_t kTrailingZeros = kWhisperHopLength;
constexpr int64_t kHalfFft = kWhisperFftSize / 2;
constexpr double kMinPower = 1e-10;
constexpr float kDynamicRangeLog10 = 8.0f;  // 80 dB below the loudest value

// The index numpy's np.pad(mode="reflect") reads for position i of a signal of
// length n extended on both sides: mirrored about the first and last samples
// without repeating them, folding again when the padding is longer than the signal.
int64_t reflect_index(int64_t i, int64_t n) {
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  int64_t j = i % period;
  if (j < 0) j += period;
  return j < n ? j : period - j;
}

}  // namespace

LogMelFrames::LogMelFrames(int n_mels)
    : filters_(slaney_mel_filters(n_mels, kWhisperFftSize, kWhisperSampleRate)),
      fft_(kWhisperFftSize),
      window_(kWhisperFftSize),
      frame_(kWhisperFftSize),
      power_(kWhisperFftSize / 2 + 1) {
  for (int i = 0; i < kWhisperFftSize; ++i)
    window_[i] = static_cast<float>(0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * i / kWhisperFftSize));
}

float LogMelFrames::sample_at(int64_t position) const {
  if (padded_length_ >= 0) {
    position = reflect_index(position, padded_length_);
    if (position >= received_) return 0.0f;  // the appended zeros
  } else if (position < 0) {
    position = -position;  // push() waits for 201 samples before the first frame
  }
  RAYO_CHECK(position >= history_start_ && position < received_, "sample ", position);
  return history_[static_cast<size_t>(position - history_start_)];
}

void LogMelFrames::emit_frame(std::vector<float>& frames) {
  const int64_t start = next_frame_ * kWhisperHopLength - kHalfFft;
  for (int i = 0; i < kWhisperFftSize; ++i) frame_[i] = sample_at(start + i) * window_[i];
  fft_.power_spectrum(frame_, power_);
  for (int m = 0; m < filters_.n_mels; ++m) {
    const float* weights = filters_.weights.data() + static_cast<size_t>(m) * filters_.n_bins;
    double energy = 0.0;
    for (int k = filters_.first_bin[m]; k < filters_.last_bin[m]; ++k)
      energy += static_cast<double>(weights[k]) * power_[k];
    const float value = static_cast<float>(std::log10(std::max(energy, kMinPower)));
    frames.push_back(value);
    max_value_ = std::max(max_value_, value);
  }
  ++next_frame_;
}

void LogMelFrames::push(std::span<const float> samples, std::vector<float>& frames) {
  RAYO_CHECK(padded_length_ < 0, "samples pushed after finish()");
  history_.insert(history_.end(), samples.begin(), samples.end());
  received_ += static_cast<int64_t>(samples.size());
  // The first frames mirror samples 1..200, so nothing is computed until those exist.
  if (received_ <= kHalfFft) return;
  while (next_frame_ * kWhisperHopLength + kHalfFft <= received_) emit_frame(frames);
  // Keep what the next frame reads; the first two frames also read the mirrored start.
  const int64_t keep_from = std::max<int64_t>(next_frame_ * kWhisperHopLength - kHalfFft, 0);
  if (keep_from > history_start_) {
    history_.erase(history_.begin(), history_.begin() + (keep_from - history_start_));
    history_start_ = keep_from;
  }
}

void LogMelFrames::finish(std::vector<float>& frames) {
  if (padded_length_ >= 0) return;
  padded_length_ = received_ + kTrailingZeros;
  // 1 + padded_length / hop STFT frames, less the last one.
  const int64_t total = padded_length_ / kWhisperHopLength;
  while (next_frame_ < total) emit_frame(frames);
  history_.clear();
  history_.shrink_to_fit();
}

void scale_log_mel(std::span<float> log10_values, float max_value) {
  const float floor = max_value - kDynamicRangeLog10;
  for (float& v : log10_values) v = (std::max(v, floor) + 4.0f) / 4.0f;
}

LogMelSpectrogram::LogMelSpectrogram(int n_mels)
    : n_mels_(n_mels), filters_(slaney_mel_filters(n_mels, kWhisperFftSize, kWhisperSampleRate)) {}

LogMel LogMelSpectrogram::compute(std::span<const float> samples) const {
  LogMelFrames stream(n_mels_);
  std::vector<float> frames;
  frames.reserve((samples.size() / kWhisperHopLength + 1) * static_cast<size_t>(n_mels_));
  stream.push(samples, frames);
  stream.finish(frames);

  LogMel mel;
  mel.n_mels = n_mels_;
  mel.n_frames = stream.frames_done();
  mel.values.resize(frames.size());
  for (int64_t t = 0; t < mel.n_frames; ++t)
    for (int m = 0; m < n_mels_; ++m)
      mel.values[static_cast<size_t>(m) * mel.n_frames + t] = frames[static_cast<size_t>(t) * n_mels_ + m];
  scale_log_mel(mel.values, stream.max_value());
  return mel;
}

}  // namespace rayo::audio
