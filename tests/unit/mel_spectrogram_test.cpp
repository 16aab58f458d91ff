#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "audio/audio_stream.h"
#include "audio/log_mel.h"
#include "audio/mel_filters.h"
#include "audio/mel_source.h"
#include "audio/mel_window.h"
#include "common/error.h"
#include "support/npy.h"
#include "support/paths.h"

namespace rayo::audio {
namespace {

const char* const kReferenceDir = "whisper/reference/u07_punct/";

double max_abs_difference(const std::vector<float>& ours, const std::vector<double>& reference) {
  EXPECT_EQ(ours.size(), reference.size());
  double worst = 0.0;
  for (size_t i = 0; i < std::min(ours.size(), reference.size()); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(ours[i]) - reference[i]));
  return worst;
}

TEST(MelFilters, MatchFasterWhisper80x201) {
  RAYO_REQUIRE_SHARED();
  const test::NpyArray reference =
      test::read_npy(test::shared_path(std::string(kReferenceDir) + "mel_filters_80x201.npy"));
  ASSERT_EQ(reference.shape, (std::vector<int64_t>{80, 201}));
  const MelFilters filters = slaney_mel_filters(80, kWhisperFftSize, kWhisperSampleRate);
  ASSERT_EQ(filters.n_bins, 201);
  // Measured: 0 (bit-identical: both compute in double and round to float32 once). The bound leaves
  // room for another libm's exp and log, not for another formula: the weights reach 0.026.
  EXPECT_LE(max_abs_difference(filters.weights, reference.values), 1e-9);
  // The bins a filter spans hold all of its weight: compute() skips the rest.
  for (int m = 0; m < 80; ++m)
    for (int k = 0; k < 201; ++k) {
      if (k < filters.first_bin[m] || k >= filters.last_bin[m]) {
        EXPECT_EQ(filters.weights[m * 201 + k], 0.0f);
      }
    }
}

TEST(MelFilters, Large128BinsAreAllNonEmptyTriangles) {
  // large-v3's 128 bins: no reference here, but each must be a triangle of unit area in Hz.
  const MelFilters filters = slaney_mel_filters(128, kWhisperFftSize, kWhisperSampleRate);
  ASSERT_EQ(filters.weights.size(), 128u * 201u);
  for (int m = 0; m < 128; ++m) EXPECT_LT(filters.first_bin[m], filters.last_bin[m]) << "filter " << m;
  EXPECT_GT(filters.weights[1], 0.0f);  // the first filter starts at 0 Hz and peaks within the first bins
}

class MelOfU07 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test::shared_dir().empty()) GTEST_SKIP() << "shared test data not found";
    samples_ = load_audio(test::shared_path("whisper/audio/u07_punct.wav").string());
  }
  std::vector<float> samples_;
};

TEST_F(MelOfU07, SamplesAreTheWavsInt16Over32768) {
  // summary.json: 83 823 samples, first8 = int16 / 32768 exactly.
  ASSERT_EQ(samples_.size(), 83823u);
  const float first8[] = {0.00128173828125f, 0.00335693359375f, 0.005096435546875f, 0.006866455078125f,
                          0.00836181640625f, 0.0098876953125f,  0.01116943359375f,  0.01220703125f};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(samples_[i], first8[i]) << "sample " << i;
}

TEST_F(MelOfU07, LogMelMatchesFasterWhisper) {
  const test::NpyArray reference = test::read_npy(test::shared_path(std::string(kReferenceDir) + "u07_punct.mel.npy"));
  ASSERT_EQ(reference.shape, (std::vector<int64_t>{80, 524}));
  LogMelSpectrogram spectrogram(80);
  const LogMel mel = spectrogram.compute(samples_);
  ASSERT_EQ(mel.n_mels, 80);
  ASSERT_EQ(mel.n_frames, 524);
  // Measured: max 2.3e-5 (mean 2e-7), at values just above the floor (-0.7955 against -0.7978), where
  // the power is 1e-8 of the loudest bin's and kissfft's float rounding shows. The issue asks for 1e-4.
  EXPECT_LE(max_abs_difference(mel.values, reference.values), 5e-5);
}

TEST_F(MelOfU07, EncoderWindowIsZeroPaddedAfterScaling) {
  const test::NpyArray reference =
      test::read_npy(test::shared_path(std::string(kReferenceDir) + "u07_punct.encoder_input_80x3000.npy"));
  ASSERT_EQ(reference.shape, (std::vector<int64_t>{80, 3000}));
  LogMelSpectrogram spectrogram(80);
  const LogMel mel = spectrogram.compute(samples_);
  ASSERT_EQ(content_frames(mel), 523);
  const std::vector<float> window = mel_window(mel, 0);
  EXPECT_LE(max_abs_difference(window, reference.values), 5e-5);  // as the spectrogram: measured 2.3e-5
  // Frame 523 (the spectrogram's last) and beyond are 0.0, not the floor value (-0.798 here).
  for (int m = 0; m < 80; ++m)
    for (int t = 523; t < 3000; ++t) ASSERT_EQ(window[m * 3000 + t], 0.0f) << "mel " << m << " frame " << t;
}

TEST_F(MelOfU07, WindowsFollowTheSeek) {
  LogMelSpectrogram spectrogram(80);
  const LogMel mel = spectrogram.compute(samples_);
  const std::vector<float> window = mel_window(mel, 100);
  EXPECT_EQ(window[0], mel.at(0, 100));
  EXPECT_EQ(window[79 * 3000 + 422], mel.at(79, 522));
  EXPECT_EQ(window[79 * 3000 + 423], 0.0f);
  const std::vector<float> past_end = mel_window(mel, 10000);
  EXPECT_TRUE(std::all_of(past_end.begin(), past_end.end(), [](float v) { return v == 0.0f; }));
}

TEST(MelSpectrogram, ShortAndSilentInputsGiveFiniteFrames) {
  LogMelSpectrogram spectrogram(80);
  for (const size_t n : {0, 1, 7, 40, 41, 159, 160, 401}) {
    const std::vector<float> samples(n, 0.25f);
    const LogMel mel = spectrogram.compute(samples);
    EXPECT_EQ(mel.n_frames, static_cast<int64_t>((n + 160) / 160)) << n << " samples";
    for (const float v : mel.values) ASSERT_TRUE(std::isfinite(v)) << n << " samples";
  }
  // Digital silence: every value sits at the floor, log10(1e-10) scaled: (-10 + 4) / 4.
  const LogMel silent = spectrogram.compute(std::vector<float>(16000, 0.0f));
  for (const float v : silent.values) ASSERT_FLOAT_EQ(v, -1.5f);
}

TEST_F(MelOfU07, StreamedFramesAreBitIdenticalToTheWholeClip) {
  LogMelSpectrogram spectrogram(80);
  const LogMel whole = spectrogram.compute(samples_);
  // Blocks smaller than a hop, than the start's mirror, and larger than a frame; and a first block that
  // ends inside the mirrored start.
  for (const size_t block : {1, 37, 150, 201, 4096}) {
    LogMelFrames stream(80);
    std::vector<float> frames;
    for (size_t at = 0; at < samples_.size(); at += block)
      stream.push(std::span<const float>(samples_).subspan(at, std::min(block, samples_.size() - at)), frames);
    stream.finish(frames);
    ASSERT_EQ(stream.frames_done(), whole.n_frames) << "block " << block;
    scale_log_mel(frames, stream.max_value());
    for (int64_t t = 0; t < whole.n_frames; ++t)
      for (int m = 0; m < 80; ++m) ASSERT_EQ(frames[t * 80 + m], whole.at(m, t)) << "block " << block << " frame " << t;
  }
}

TEST(MelSpectrogram, StreamedShortClipsMatchTheWholeClip) {
  // Clips shorter than the start's mirror (200 samples) are computed at finish(), folding the padding.
  std::vector<float> samples(380);
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = std::sin(0.05 * i * i);
  for (const size_t n : {1, 40, 41, 200, 201, 359, 360, 380}) {
    const std::span<const float> clip(samples.data(), n);
    const LogMel whole = LogMelSpectrogram(80).compute(clip);
    LogMelFrames stream(80);
    std::vector<float> frames;
    for (size_t i = 0; i < n; ++i) stream.push(clip.subspan(i, 1), frames);
    stream.finish(frames);
    ASSERT_EQ(stream.frames_done(), whole.n_frames);
    scale_log_mel(frames, stream.max_value());
    for (int64_t t = 0; t < whole.n_frames; ++t)
      for (int m = 0; m < 80; ++m) ASSERT_EQ(frames[t * 80 + m], whole.at(m, t)) << n << " samples, frame " << t;
  }
}

TEST(MelSpectrogram, ToneLandsInItsMelBin) {
  // A 1 kHz sine peaks in the filter whose triangle is centred nearest 1 kHz.
  std::vector<float> tone(16000);
  for (size_t i = 0; i < tone.size(); ++i) tone[i] = 0.5f * std::sin(2.0 * M_PI * 1000.0 * i / 16000.0);
  LogMelSpectrogram spectrogram(80);
  const LogMel mel = spectrogram.compute(tone);
  const MelFilters& filters = spectrogram.filters();
  int best_filter = 0;
  for (int m = 0; m < 80; ++m)
    if (filters.weights[m * 201 + 25] > filters.weights[best_filter * 201 + 25]) best_filter = m;  // bin 25 = 1 kHz
  int loudest = 0;
  for (int m = 0; m < 80; ++m)
    if (mel.at(m, 50) > mel.at(loudest, 50)) loudest = m;
  EXPECT_EQ(loudest, best_filter);
}

}  // namespace
}  // namespace rayo::audio

namespace rayo::audio {
namespace {

// A recording streamed in two passes gives the windows of the whole clip, bit
// for bit, from every seek the transcription loop can take, while holding no
// more than a window of frames.
TEST(StreamingMel, WindowsAreTheWholeClipsInBoundedMemory) {
  RAYO_REQUIRE_SHARED();
  const std::string path = test::shared_path("whisper/audio/long.wav").string();
  const LogMel whole = LogMelSpectrogram(80).compute(load_audio(path));
  InMemoryMel reference(whole);
  int opened = 0;
  auto open = [&] {
    ++opened;
    return std::make_unique<AudioStream>(path);
  };
  StreamingMel streamed(open(), open, 80);
  EXPECT_EQ(opened, 2);  // the first pass, then the second
  ASSERT_EQ(streamed.content_frames(), reference.content_frames());
  ASSERT_GT(streamed.content_frames(), 2 * kWhisperWindowFrames);  // long.wav: 65 s, three windows
  for (int64_t seek : {int64_t{0}, int64_t{0}, int64_t{1234}, int64_t{2999}, int64_t{3000}, int64_t{5555},
                       streamed.content_frames() - 10, streamed.content_frames(), streamed.content_frames() + 100}) {
    EXPECT_EQ(streamed.window(seek), reference.window(seek)) << "seek " << seek;
    EXPECT_LE(streamed.frames_held(), kWhisperWindowFrames + 1000) << "seek " << seek;  // a window and a read
  }
  EXPECT_THROW(streamed.window(10), Error);  // no seeking back past what it forgot
}

}  // namespace
}  // namespace rayo::audio
