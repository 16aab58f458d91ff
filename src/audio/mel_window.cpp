#include "audio/mel_window.h"

#include <algorithm>

#include "common/error.h"

namespace rayo::audio {

int64_t content_frames(const LogMel& mel) { return std::max<int64_t>(mel.n_frames - 1, 0); }

std::vector<float> mel_window(const LogMel& mel, int64_t seek_frame) {
  RAYO_CHECK(seek_frame >= 0, "seek frame ", seek_frame);
  std::vector<float> window(static_cast<size_t>(mel.n_mels) * kWhisperWindowFrames, 0.0f);
  const int64_t frames = std::clamp<int64_t>(content_frames(mel) - seek_frame, 0, kWhisperWindowFrames);
  if (frames == 0) return window;
  for (int m = 0; m < mel.n_mels; ++m) {
    const float* row = mel.values.data() + static_cast<size_t>(m) * mel.n_frames + seek_frame;
    std::copy_n(row, frames, window.begin() + static_cast<size_t>(m) * kWhisperWindowFrames);
  }
  return window;
}

}  // namespace rayo::audio
