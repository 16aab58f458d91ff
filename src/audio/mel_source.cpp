#include "audio/mel_source.h"

#include <algorithm>

#include "audio/mel_window.h"
#include "common/error.h"

namespace rayo::audio {

namespace {
constexpr size_t kReadSamples = 1 << 16;  // 4 s at 16 kHz per read
}  // namespace

int64_t InMemoryMel::content_frames() const { return audio::content_frames(mel_); }

std::vector<float> InMemoryMel::window(int64_t seek_frame) { return mel_window(mel_, seek_frame); }

StreamingMel::StreamingMel(std::unique_ptr<AudioStream> first, std::function<std::unique_ptr<AudioStream>()> reopen,
                           int n_mels)
    : frames_(n_mels), block_(kReadSamples) {
  // Pass 1: the length and the maximum, keeping no frames.
  LogMelFrames pass1(n_mels);
  std::vector<float> scratch;
  while (const size_t n = first->read(block_)) {
    pass1.push(std::span<const float>(block_.data(), n), scratch);
    scratch.clear();
  }
  pass1.finish(scratch);
  content_frames_ = std::max<int64_t>(pass1.frames_done() - 1, 0);  // the last frame is padding (mel_window.h)
  max_value_ = pass1.max_value();
  first.reset();
  stream_ = reopen();
}

void StreamingMel::fill_to(int64_t end) {
  while (held_start_ + frames_held() < end && !stream_ended_) {
    const size_t before = held_.size();
    const size_t n = stream_->read(block_);
    if (n > 0) {
      frames_.push(std::span<const float>(block_.data(), n), held_);
    } else {
      frames_.finish(held_);
      stream_ended_ = true;
    }
    scale_log_mel(std::span<float>(held_).subspan(before), max_value_);
  }
}

std::vector<float> StreamingMel::window(int64_t seek_frame) {
  RAYO_CHECK(seek_frame >= held_start_, "a streamed log-mel cannot seek back to frame ", seek_frame, " (holds ",
             held_start_, " on)");
  const int m = frames_.n_mels();
  // Forget the frames before the window.
  const int64_t drop = std::min(seek_frame, held_start_ + frames_held()) - held_start_;
  held_.erase(held_.begin(), held_.begin() + drop * m);
  held_start_ += drop;
  const int64_t frames = std::clamp<int64_t>(content_frames_ - seek_frame, 0, kWhisperWindowFrames);
  fill_to(seek_frame + frames);
  std::vector<float> window(static_cast<size_t>(m) * kWhisperWindowFrames, 0.0f);
  const int64_t have = std::min<int64_t>(frames, held_start_ + frames_held() - seek_frame);
  for (int64_t t = 0; t < have; ++t) {
    const float* frame = held_.data() + (seek_frame - held_start_ + t) * m;
    for (int k = 0; k < m; ++k) window[static_cast<size_t>(k) * kWhisperWindowFrames + t] = frame[k];
  }
  return window;
}

}  // namespace rayo::audio
