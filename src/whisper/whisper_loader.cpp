#include "whisper/whisper_loader.h"

#include <filesystem>

#include "common/error.h"
#include "whisper/ggml_whisper.h"
#include "whisper/ggml_whisper_file.h"

namespace rayo::whisper {

WhisperFiles load_whisper(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (!fs::exists(status)) fail(path, ": no such file or folder");
  if (fs::is_directory(status)) return load_ct2_whisper(path);
  if (GgmlWhisperFile::has_magic(path)) return load_ggml_whisper(path);
  // A CTranslate2 folder's model.bin named by itself: the folder around it.
  const fs::path parent = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (fs::path(path).filename() == "model.bin" && fs::exists(parent / "config.json"))
    return load_ct2_whisper(parent.string());
  fail(path, ": not a Whisper model (a CTranslate2 folder with model.bin, config.json and vocabulary.txt, or a "
             "whisper.cpp ggml-*.bin file)");
}

}  // namespace rayo::whisper
