#include "support/ct2_int8_folder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/half.h"
#include "whisper/ct2_writer.h"
#include "whisper/whisper_spec.h"

namespace rayo::test {
namespace {

using whisper::Ct2Type;
using whisper::Ct2Variable;

std::vector<float> floats_of(const Ct2Variable& v) {
  std::vector<float> out(v.elements());
  for (size_t i = 0; i < out.size(); ++i) {
    if (v.type == Ct2Type::F16) {
      uint16_t h;
      std::memcpy(&h, v.bytes.data() + 2 * i, 2);
      out[i] = fp16_to_fp32(h);
    } else {
      std::memcpy(&out[i], v.bytes.data() + 4 * i, 4);
    }
  }
  return out;
}

bool quantized_by_ct2(const Ct2Variable& v) {
  return v.shape.size() >= 2 && std::string_view(v.name).ends_with("/weight") &&
         (v.type == Ct2Type::F16 || v.type == Ct2Type::F32);
}

}  // namespace

uint64_t fnv1a64(std::span<const uint8_t> bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

void write_ct2_int8_folder(const std::filesystem::path& from, const std::filesystem::path& to) {
  const whisper::WhisperFiles files = whisper::load_ct2_whisper(from.string());
  const whisper::Ct2Model& model = files.model;
  std::filesystem::create_directories(to);

  struct Out {
    std::string name;
    std::vector<uint32_t> shape;
    Ct2Type type;
    std::vector<uint8_t> bytes;
  };
  std::vector<Out> out;
  for (const Ct2Variable& v : model.variables()) {
    if (!quantized_by_ct2(v)) {
      out.push_back({v.name, v.shape, v.type, std::vector<uint8_t>(v.bytes.begin(), v.bytes.end())});
      continue;
    }
    // CTranslate2's numpy arithmetic, in float32: amax per row, scale = 127 / amax, rint(x * scale).
    const std::vector<float> x = floats_of(v);
    const size_t rows = v.shape[0], cols = x.size() / rows;
    std::vector<uint8_t> q(x.size()), scales(4 * rows);
    for (size_t r = 0; r < rows; ++r) {
      float amax = 0;
      for (size_t c = 0; c < cols; ++c) amax = std::max(amax, std::abs(x[r * cols + c]));
      if (amax == 0) amax = 127.0f;
      amax = std::max(amax, 127.0f / std::numeric_limits<float>::max());
      const float scale = 127.0f / amax;
      for (size_t c = 0; c < cols; ++c)
        q[r * cols + c] = static_cast<uint8_t>(static_cast<int8_t>(std::nearbyint(x[r * cols + c] * scale)));
      std::memcpy(scales.data() + 4 * r, &scale, 4);
    }
    out.push_back({v.name, v.shape, Ct2Type::I8, std::move(q)});
    out.push_back({v.name + "_scale", {v.shape[0]}, Ct2Type::F32, std::move(scales)});
  }
  std::sort(out.begin(), out.end(), [](const Out& a, const Out& b) { return a.name < b.name; });

  whisper::Ct2ModelWriter writer((to / "model.bin").string(), model.spec_name(), model.spec_revision(),
                                 static_cast<uint32_t>(out.size()));
  for (const Out& v : out) writer.add(v.name, v.shape, v.type, v.bytes);
  writer.finish(model.aliases());

  std::filesystem::copy_file(from / "config.json", to / "config.json", std::filesystem::copy_options::overwrite_existing);
  if (std::filesystem::exists(from / "tokenizer.json"))
    std::filesystem::copy_file(from / "tokenizer.json", to / "tokenizer.json",
                               std::filesystem::copy_options::overwrite_existing);
  std::ofstream(to / "vocabulary.json") << nlohmann::json(files.vocabulary).dump(2);
}

}  // namespace rayo::test
