#pragma once
// Reads numpy .npy files (format 1.0 to 3.0) holding little-endian float32 or
// float64 arrays in C order: the reference intermediates under shared/whisper.
#include <cstdint>
#include <filesystem>
#include <vector>

namespace rayo::test {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<double> values;  // row-major, widened to double whatever the file's type
};

// Throws rayo::Error for anything else (another dtype, Fortran order, a short file).
NpyArray read_npy(const std::filesystem::path& path);

}  // namespace rayo::test
