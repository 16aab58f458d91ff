#include "audio/audio_decoder.h"

#include <sndfile.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/error.h"

namespace rayo::audio {
namespace {

// Whether libsndfile found the data chunk shorter than its header declares (a
// WAV cut short: a partial download, a copy that stopped). libsndfile reads
// what is there and notes it in its log ("data : 120860 (should be 9956)");
// a declared size of 0 or 0xFFFFFFFF is a streaming writer's "unknown
// length" (ffmpeg writing to a pipe), not a truncation.
bool truncated_data(SNDFILE* file) {
  char log[4096] = {};
  sf_command(file, SFC_GET_LOG_INFO, log, sizeof log);
  const char* line = std::strstr(log, "\ndata : ");
  if (!line) return false;
  unsigned long long declared = 0, actual = 0;
  if (std::sscanf(line, "\ndata : %llu (should be %llu)", &declared, &actual) != 2) return false;
  return declared != 0 && declared != 0xFFFFFFFFull && actual < declared;
}

}  // namespace

// Bytes in memory (standard input, an upload) as a seekable file for
// libsndfile's virtual I/O.
struct AudioDecoder::MemoryFile {
  std::vector<unsigned char> bytes;
  sf_count_t position = 0;

  static sf_count_t length(void* self) {
    return static_cast<sf_count_t>(static_cast<MemoryFile*>(self)->bytes.size());
  }

  static sf_count_t seek(sf_count_t offset, int whence, void* self) {
    auto* b = static_cast<MemoryFile*>(self);
    const sf_count_t size = static_cast<sf_count_t>(b->bytes.size());
    sf_count_t target = offset;
    if (whence == SEEK_CUR) target += b->position;
    if (whence == SEEK_END) target += size;
    if (target < 0 || target > size) return -1;
    b->position = target;
    return target;
  }

  static sf_count_t read(void* out, sf_count_t count, void* self) {
    auto* b = static_cast<MemoryFile*>(self);
    const sf_count_t available = static_cast<sf_count_t>(b->bytes.size()) - b->position;
    const sf_count_t n = std::clamp<sf_count_t>(count, 0, available);
    std::memcpy(out, b->bytes.data() + b->position, static_cast<size_t>(n));
    b->position += n;
    return n;
  }

  static sf_count_t write(const void*, sf_count_t, void*) { return 0; }
  static sf_count_t tell(void* self) { return static_cast<MemoryFile*>(self)->position; }
};

namespace {

std::vector<unsigned char> read_all_stdin() {
  std::vector<unsigned char> bytes;
  unsigned char block[1 << 16];
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, block, sizeof block);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("standard input: cannot read: ", std::strerror(errno));
    }
    bytes.insert(bytes.end(), block, block + n);
  }
  return bytes;
}

// libsndfile's reason ends with a full stop and may hold a newline; the message must stay one line.
std::string one_line(const char* reason) {
  std::string s = reason ? reason : "unknown error";
  std::replace(s.begin(), s.end(), '\n', ' ');
  while (!s.empty() && (s.back() == '.' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

AudioDecoder::AudioDecoder(const std::string& path) : name_(path == "-" ? "standard input" : path) {
  SF_INFO info{};
  if (path == "-") {
    memory_ = std::make_unique<MemoryFile>();
    memory_->bytes = read_all_stdin();
    open_memory(info);
  } else {
    // Checked here because libsndfile gives one reason for all of these.
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) fail(path, ": no such file");
    if (std::filesystem::is_directory(status)) fail(path, ": is a directory, not an audio file");
    if (std::filesystem::is_regular_file(status) && std::filesystem::file_size(path, ec) == 0)
      fail(path, ": empty file, no audio");
    file_ = sf_open(path.c_str(), SFM_READ, &info);
  }
  check_header(info);
}

AudioDecoder::AudioDecoder(std::string name, std::vector<unsigned char> bytes) : name_(std::move(name)) {
  SF_INFO info{};
  memory_ = std::make_unique<MemoryFile>();
  memory_->bytes = std::move(bytes);
  open_memory(info);
  check_header(info);
}

void AudioDecoder::open_memory(SF_INFO& info) {
  if (memory_->bytes.empty()) fail(name_, ": empty input, no audio");
  static SF_VIRTUAL_IO io{&MemoryFile::length, &MemoryFile::seek, &MemoryFile::read, &MemoryFile::write,
                          &MemoryFile::tell};
  file_ = sf_open_virtual(&io, SFM_READ, &info, memory_.get());
}

void AudioDecoder::check_header(const SF_INFO& info) {
  if (!file_) fail(name_, ": not a readable audio file (", one_line(sf_strerror(nullptr)), ")");
  sample_rate_ = info.samplerate;
  channels_ = info.channels;
  declared_frames_ = info.frames;
  auto refuse = [&](auto&&... why) {
    sf_close(file_);
    file_ = nullptr;
    fail(name_, why...);
  };
  if (sample_rate_ <= 0 || channels_ <= 0)
    refuse(": invalid audio header (", channels_, " channels at ", sample_rate_, " Hz)");
  if (declared_frames_ <= 0) refuse(": no audio samples");
  if (truncated_data(file_)) refuse(": truncated audio (the file ends before the data its header declares)");
}

AudioDecoder::~AudioDecoder() {
  if (file_) sf_close(file_);
}

size_t AudioDecoder::read_mono(std::span<float> out) {
  if (out.empty()) return 0;
  interleaved_.resize(out.size() * static_cast<size_t>(channels_));
  const sf_count_t frames = sf_readf_float(file_, interleaved_.data(), static_cast<sf_count_t>(out.size()));
  if (sf_error(file_) != SF_ERR_NO_ERROR) fail(name_, ": corrupt audio data (", one_line(sf_strerror(file_)), ")");
  const size_t n = static_cast<size_t>(std::max<sf_count_t>(frames, 0));
  if (channels_ == 1) {
    std::copy_n(interleaved_.begin(), n, out.begin());
    return n;
  }
  const float scale = 1.0f / static_cast<float>(channels_);
  for (size_t i = 0; i < n; ++i) {
    const float* frame = interleaved_.data() + i * static_cast<size_t>(channels_);
    float sum = 0.0f;
    for (int c = 0; c < channels_; ++c) sum += frame[c];
    out[i] = sum * scale;
  }
  return n;
}

}  // namespace rayo::audio
