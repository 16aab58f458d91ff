#pragma once
// Whisper's log-mel spectrogram of 16 kHz mono audio, as faster-whisper's
// FeatureExtractor computes it (the features its reference transcripts come from):
//   160 zero samples appended; a centred STFT (reflect padding of n_fft / 2 at
//   both ends), n_fft 400, hop 160, periodic Hann window; the last STFT frame
//   dropped; power |X|^2; Slaney mel filters; log10(max(x, 1e-10)); a floor at
//   the clip's maximum - 8; then (x + 4) / 4.
// LogMelFrames computes the log10 frames as the samples arrive, in memory
// bounded by a block; the floor needs the maximum over the whole clip, so
// LogMelSpectrogram (a clip in memory) applies it once all frames are known,
// and a streaming caller applies scale_log_mel with the maximum it settles on.
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "audio/mel_filters.h"
#include "audio/real_fft.h"

namespace rayo::audio {

inline constexpr int kWhisperFftSize = 400;
inline constexpr int kWhisperHopLength = 160;

// log10 mel energies frame by frame, [frame][n_mels], from samples pushed a block at a time.
// The frames are bit-identical however the samples are split into blocks.
class LogMelFrames {
 public:
  explicit LogMelFrames(int n_mels);

  const MelFilters& filters() const { return filters_; }
  int n_mels() const { return filters_.n_mels; }

  // Appends the frames the new samples complete to frames (n_mels values each).
  void push(std::span<const float> samples, std::vector<float>& frames);
  // Ends the audio: appends the remaining frames (those reaching the end's padding).
  // Then a clip of n samples has given (n + 160) / 160 frames; no samples give one.
  void finish(std::vector<float>& frames);

  int64_t frames_done() const { return next_frame_; }
  // The largest log10 value of the frames so far (the floor is 8 below the clip's).
  float max_value() const { return max_value_; }

 private:
  void emit_frame(std::vector<float>& frames);
  float sample_at(int64_t position) const;  // position in the signal; the padding once finished

  MelFilters filters_;
  RealFft fft_;
  std::vector<float> window_;  // periodic Hann, np.hanning(401)[:-1] in float32
  std::vector<float> frame_, power_;
  std::vector<float> history_;  // samples [history_start_, received_): what the next frames still read
  int64_t history_start_ = 0;
  int64_t received_ = 0;
  int64_t padded_length_ = -1;  // the samples plus 160 zeros, once finished
  int64_t next_frame_ = 0;
  float max_value_ = -INFINITY;
};

// The floor and scaling, in place: v = (max(v, max_value - 8) + 4) / 4.
void scale_log_mel(std::span<float> log10_values, float max_value);

struct LogMel {
  int n_mels = 0;
  int64_t n_frames = 0;
  std::vector<float> values;  // [n_mels][n_frames], row-major, as Whisper lays out its features

  float at(int mel, int64_t frame) const { return values[static_cast<size_t>(mel) * n_frames + frame]; }
};

class LogMelSpectrogram {
 public:
  // n_mels: 80, or 128 for large-v3.
  explicit LogMelSpectrogram(int n_mels);

  const MelFilters& filters() const { return filters_; }

  // The whole clip's spectrogram, floored at its own maximum - 8: 83 823 samples give 524 frames.
  LogMel compute(std::span<const float> samples) const;

 private:
  int n_mels_;
  MelFilters filters_;
};

}  // namespace rayo::audio
