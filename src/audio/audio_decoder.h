#pragma once
// Decodes an audio file (anything libsndfile reads: WAV, FLAC, OGG/Vorbis/Opus,
// MP3, ...) at its own sample rate, mixed down to mono, a block at a time, so
// that an hour of audio never has to be in memory at once.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

struct sf_private_tag;  // libsndfile's SNDFILE and SF_INFO, kept out of this header
struct SF_INFO;

namespace rayo::audio {

class AudioDecoder {
 public:
  // Opens PATH, or standard input when PATH is "-" (read into memory first: most
  // containers need to seek). Throws rayo::Error in one line for a missing or
  // empty file, a file libsndfile does not recognise, and audio with no samples.
  explicit AudioDecoder(const std::string& path);
  // Decodes a file's bytes held in memory (an upload); NAME is what errors call it.
  AudioDecoder(std::string name, std::vector<unsigned char> bytes);
  ~AudioDecoder();
  AudioDecoder(const AudioDecoder&) = delete;
  AudioDecoder& operator=(const AudioDecoder&) = delete;

  int sample_rate() const { return sample_rate_; }
  int channels() const { return channels_; }
  // Frames (samples per channel) the container declares; the decoded count may be
  // smaller for a truncated file.
  int64_t declared_frames() const { return declared_frames_; }
  const std::string& name() const { return name_; }

  // Decodes up to out.size() mono samples (the mean of the channels) in [-1, 1];
  // returns how many, 0 at the end. Throws rayo::Error when the data is corrupt.
  size_t read_mono(std::span<float> out);

 private:
  struct MemoryFile;
  // Opens memory_'s bytes through libsndfile's virtual I/O.
  void open_memory(SF_INFO& info);
  // Checks what libsndfile found in the header (throws, closing the file).
  void check_header(const SF_INFO& info);

  std::string name_;
  std::unique_ptr<MemoryFile> memory_;  // the bytes libsndfile reads through virtual I/O ("-", uploads)
  sf_private_tag* file_ = nullptr;
  int sample_rate_ = 0;
  int channels_ = 0;
  int64_t declared_frames_ = 0;
  std::vector<float> interleaved_;  // one block of frames before the mixdown
};

}  // namespace rayo::audio
