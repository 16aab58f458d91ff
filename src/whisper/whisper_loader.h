#pragma once
// One entry point for every Whisper model file rayo reads: a CTranslate2
// folder as faster-whisper's users have it (or its model.bin), or a
// whisper.cpp ggml-*.bin file, told apart by what is on disk.
#include <string>

#include "whisper/whisper_spec.h"

namespace rayo::whisper {

// Throws rayo::Error in one line: nothing at `path`, a file that is neither
// kind, or whatever the kind's reader refuses.
WhisperFiles load_whisper(const std::string& path);

}  // namespace rayo::whisper
