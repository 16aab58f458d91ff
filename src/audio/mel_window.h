#pragma once
// The encoder's input: 30 seconds (3000 frames) of the log-mel from a seek
// position, as faster-whisper cuts it. It treats the spectrogram's last frame as
// padding (content = n_frames - 1 frames) and pads a short window with 0.0 after
// the (x + 4) / 4 scaling; OpenAI's whisper and whisper.cpp pad with the floor
// value instead, which flips borderline words against faster-whisper's
// transcripts (../shared/whisper/README.md, "What decides borderline words").
#include <cstdint>
#include <vector>

#include "audio/log_mel.h"

namespace rayo::audio {

inline constexpr int kWhisperWindowFrames = 3000;

// Frames of mel that hold audio: all but the last.
int64_t content_frames(const LogMel& mel);

// [n_mels][3000]: mel[:, seek : seek + min(3000, content_frames - seek)], then zeros.
// A seek at or past the content gives all zeros.
std::vector<float> mel_window(const LogMel& mel, int64_t seek_frame);

}  // namespace rayo::audio
