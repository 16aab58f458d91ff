#include "audio/audio_stream.h"

#include <algorithm>

#include "common/error.h"

namespace rayo::audio {

namespace {
// Source frames decoded per refill: about half a second at 44.1 kHz.
constexpr size_t kDecodeBlockFrames = 1 << 14;
}  // namespace

AudioStream::AudioStream(const std::string& path) : decoder_(path) { start(); }

AudioStream::AudioStream(std::string name, std::vector<unsigned char> bytes)
    : decoder_(std::move(name), std::move(bytes)) {
  start();
}

void AudioStream::start() {
  decoded_.resize(kDecodeBlockFrames);
  if (decoder_.sample_rate() != kWhisperSampleRate)
    resampler_ = std::make_unique<Resampler>(decoder_.sample_rate(), kWhisperSampleRate);
}

bool AudioStream::refill() {
  pending_.clear();
  pending_offset_ = 0;
  while (pending_.empty() && !ended_) {
    const size_t n = decoder_.read_mono(decoded_);
    const std::span<const float> block(decoded_.data(), n);
    if (n == 0) ended_ = true;
    if (!resampler_) {
      pending_.assign(block.begin(), block.end());
    } else if (n > 0) {
      resampler_->process(block, pending_);
    } else {
      resampler_->flush(pending_);
    }
  }
  return !pending_.empty();
}

size_t AudioStream::read(std::span<float> out) {
  size_t written = 0;
  while (written < out.size()) {
    if (pending_offset_ == pending_.size() && !refill()) break;
    const size_t n = std::min(out.size() - written, pending_.size() - pending_offset_);
    std::copy_n(pending_.begin() + static_cast<std::ptrdiff_t>(pending_offset_), n, out.begin() + written);
    pending_offset_ += n;
    written += n;
  }
  return written;
}

std::vector<float> read_all(AudioStream& stream, const std::string& name) {
  std::vector<float> samples;
  std::vector<float> block(1 << 16);
  while (const size_t n = stream.read(block)) samples.insert(samples.end(), block.begin(), block.begin() + n);
  if (samples.empty()) fail(name, ": no audio samples");
  return samples;
}

std::vector<float> load_audio(const std::string& path) {
  AudioStream stream(path);
  return read_all(stream, path == "-" ? "standard input" : path);
}

std::vector<float> load_audio(std::string name, std::vector<unsigned char> bytes) {
  AudioStream stream(name, std::move(bytes));
  return read_all(stream, name);
}

}  // namespace rayo::audio
