#pragma once
// A CTranslate2 int8 Whisper folder made from a float one, byte for byte as
// CTranslate2's own converter writes it (WhisperSpec.optimize("int8"), what
// `ct2-transformers-converter --quantization int8` runs): every weight matrix
// (linear, convolution, embedding: "/weight" variables of rank 2 or more) as
// int8 values q with a float32 "<name>_scale" a row, q = rint(x * scale) with
// scale = 127 / the row's largest magnitude (127 for a zero row); the other
// variables as they are; vocabulary.json, as CTranslate2 4 writes it.
// tests/data/whisper-int8/ct2-int8-variables.txt holds CTranslate2's bytes
// (their hashes) for the real tiny.en, which the tests compare with these.
#include <cstdint>
#include <filesystem>
#include <span>

namespace rayo::test {

void write_ct2_int8_folder(const std::filesystem::path& from, const std::filesystem::path& to);

// FNV-1a 64 of some bytes (the hashes of ct2-int8-variables.txt).
uint64_t fnv1a64(std::span<const uint8_t> bytes);

}  // namespace rayo::test
