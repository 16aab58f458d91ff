#pragma once
// Whisper's input signal: any file libsndfile decodes (or standard input as "-"),
// mixed down to mono and resampled to 16 kHz, delivered a block at a time. Memory
// stays bounded by the block size whatever the length of the audio.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "audio/audio_decoder.h"
#include "audio/resampler.h"

namespace rayo::audio {

inline constexpr int kWhisperSampleRate = 16000;

class AudioStream {
 public:
  // Throws rayo::Error (one line) as AudioDecoder does.
  explicit AudioStream(const std::string& path);
  // Decodes a file's bytes held in memory (an upload); NAME is what errors call it.
  AudioStream(std::string name, std::vector<unsigned char> bytes);

  // Fills out with the next 16 kHz mono samples and returns how many; fewer than
  // out.size() only at the end of the audio, 0 once it has all been read.
  size_t read(std::span<float> out);

  int source_sample_rate() const { return decoder_.sample_rate(); }
  int source_channels() const { return decoder_.channels(); }
  // The length the container declares, in seconds (what decodes may be shorter;
  // a stream written without its length declares a huge one).
  double declared_seconds() const {
    return static_cast<double>(decoder_.declared_frames()) / decoder_.sample_rate();
  }

 private:
  // Decodes (and resamples) one more block into pending_; false at the end.
  bool refill();
  // The constructors' common part, once decoder_ is open.
  void start();

  AudioDecoder decoder_;
  std::unique_ptr<Resampler> resampler_;  // none when the source is already at 16 kHz (kept bit-exact)
  std::vector<float> decoded_;            // one block at the source rate
  std::vector<float> pending_;            // 16 kHz samples not yet handed out
  size_t pending_offset_ = 0;
  bool ended_ = false;
};

// The whole clip at 16 kHz mono, for audio that fits in memory (a 30-s window,
// a test clip). Throws rayo::Error for unreadable or empty audio.
std::vector<float> load_audio(const std::string& path);
// The same for a file's bytes held in memory (an upload); NAME is what errors call it.
std::vector<float> load_audio(std::string name, std::vector<unsigned char> bytes);
// The rest of a stream's samples; NAME is what errors call it.
std::vector<float> read_all(AudioStream& stream, const std::string& name);

}  // namespace rayo::audio
