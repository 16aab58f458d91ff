#pragma once
// Where a transcription takes its 30-s windows of log-mel from: a spectrogram
// in memory (a clip), or one computed as the audio streams by (a recording of
// hours), in memory bounded by a window whatever the length.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "audio/audio_stream.h"
#include "audio/log_mel.h"

namespace rayo::audio {

class MelSource {
 public:
  virtual ~MelSource() = default;
  virtual int n_mels() const = 0;
  // Frames that hold audio (content_frames of the whole spectrogram).
  virtual int64_t content_frames() const = 0;
  // The encoder's window from seek_frame: mel_window of the whole spectrogram.
  // Seeks never go back (a streaming source forgets the frames before the
  // last window's start).
  virtual std::vector<float> window(int64_t seek_frame) = 0;
};

// A spectrogram in memory (not owned: it must outlive the source).
class InMemoryMel final : public MelSource {
 public:
  explicit InMemoryMel(const LogMel& mel) : mel_(mel) {}
  int n_mels() const override { return mel_.n_mels; }
  int64_t content_frames() const override;
  std::vector<float> window(int64_t seek_frame) override;

 private:
  const LogMel& mel_;
};

// The log-mel of audio read twice from its start: a first pass finds the
// clip's length and its maximum (the floor, maximum - 8, needs the whole
// clip), the second computes frames as the windows ask for them and forgets
// those behind. The windows are bit for bit those of LogMelSpectrogram on the
// whole clip. `first` is the audio, opened; `reopen` gives a fresh stream of
// the same audio from its start (a file opened again).
class StreamingMel final : public MelSource {
 public:
  StreamingMel(std::unique_ptr<AudioStream> first, std::function<std::unique_ptr<AudioStream>()> reopen, int n_mels);
  int n_mels() const override { return frames_.n_mels(); }
  int64_t content_frames() const override { return content_frames_; }
  std::vector<float> window(int64_t seek_frame) override;

  // Frames held now (for tests of the bound).
  int64_t frames_held() const { return static_cast<int64_t>(held_.size()) / frames_.n_mels(); }

 private:
  // Computes frames until frame `end` is held or the audio ends.
  void fill_to(int64_t end);

  LogMelFrames frames_;      // the second pass
  std::unique_ptr<AudioStream> stream_;
  bool stream_ended_ = false;
  int64_t content_frames_ = 0;
  float max_value_ = 0;
  std::vector<float> held_;  // frames [held_start_, held_start_ + frames_held()), [frame][n_mels], scaled
  int64_t held_start_ = 0;
  std::vector<float> block_;  // samples of one read
};

}  // namespace rayo::audio
