// Requantization of llama.cpp's own blocks: every quantized tensor of the shared
// models is dequantized row by row and quantized again with our reference
// quantizer (ggml's quantize_row_*_ref algorithms), then compared block by block.
//
// Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 round-trip byte for byte: their scale comes
// from the block's extreme value, which dequantizes to exactly the level that
// defined it (e.g. -8 * d for Q4_0), so the same scale and the same levels are
// found again.
//
// The k-quants do not, and cannot with ggml's algorithm: their scales come from
// an iterative weighted least-squares search (make_qkx2_quants, make_q3_quants,
// make_qx_quants) followed by 4/6/8-bit quantization of the sub-block scales
// relative to the largest one. Run on data that already sits exactly on a
// level grid, the search converges to another (scale, min, levels) choice when
// the original block did not use the extreme levels (e.g. a Q4_K sub-block whose
// lowest level is not 0 gets a different min; a Q3_K sub-block whose largest
// magnitude sits at +3 rather than -4 is refitted to a different scale), or to
// an equivalent encoding (a Q6_K sub-block with +31 and -31 at the extremes may
// flip the sign of its scale and every level: different bytes, same values).
// The counts below are what ggml's own algorithm gives on these files: they
// were cross-checked block for block against a transcription of ggml-quants.c,
// so any change means our quantizer no longer reproduces llama.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "support/paths.h"

namespace rayo {
namespace {

struct Counts {
  int64_t blocks = 0;
  int64_t bytes_differ = 0;   // requantized block is not byte-identical
  int64_t values_differ = 0;  // ... and does not even decode to the same values
  bool operator==(const Counts&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Counts& c) {
  return out << "{" << c.blocks << " blocks, " << c.bytes_differ << " differ in bytes, " << c.values_differ
             << " in values}";
}

TEST(DequantRequantize, LlamaCppBlocksRoundTrip) {
  RAYO_REQUIRE_SHARED();
  std::map<std::string, Counts> counts;
  std::vector<std::filesystem::path> models;
  for (const auto& entry : std::filesystem::directory_iterator(test::shared_path("models")))
    if (entry.path().extension() == ".gguf") models.push_back(entry.path());
  ASSERT_FALSE(models.empty());

  for (const auto& path : models) {
    const auto file = gguf::File::open(path.string());
    for (const auto& t : file.tensors()) {
      const auto& ti = info(t.type);
      if (!ti.quantized) continue;
      ASSERT_TRUE(quant::can_quantize(t.type)) << type_name(t.type);
      const uint64_t row_len = t.ne.at(0);
      const uint64_t row_size = row_bytes(t.type, row_len);
      std::vector<float> values(row_len), again(row_len);
      std::vector<uint64_t> requantized((row_size + 7) / 8);  // aligned for every block type
      auto* out = reinterpret_cast<const uint8_t*>(requantized.data());
      Counts& c = counts[std::string(ti.name)];
      for (uint64_t r = 0; r < t.rows(); ++r) {
        const uint8_t* original = t.data + r * row_size;
        quant::dequantize_row(t.type, original, values.data(), static_cast<int64_t>(row_len));
        quant::quantize_row(t.type, values.data(), requantized.data(), static_cast<int64_t>(row_len));
        quant::dequantize_row(t.type, requantized.data(), again.data(), static_cast<int64_t>(row_len));
        for (uint64_t b = 0; b < row_len / ti.block_size; ++b) {
          ++c.blocks;
          if (std::memcmp(original + b * ti.block_bytes, out + b * ti.block_bytes, ti.block_bytes) == 0) continue;
          ++c.bytes_differ;
          if (std::memcmp(&values[b * ti.block_size], &again[b * ti.block_size], ti.block_size * sizeof(float)))
            ++c.values_differ;
        }
      }
    }
  }

  const std::map<std::string, Counts> expected = {
      {"Q4_0", {352256, 0, 0}},         {"Q4_1", {204800, 0, 0}},         {"Q5_0", {204800, 0, 0}},
      {"Q5_1", {204800, 0, 0}},         {"Q8_0", {838280, 0, 0}},         {"Q2_K", {16384, 189, 189}},
      {"Q3_K", {25600, 11858, 11858}},  {"Q4_K", {51392, 25, 25}},        {"Q5_K", {39168, 3328, 3328}},
      {"Q6_K", {120209, 23338, 7568}},
  };
  EXPECT_EQ(counts.size(), expected.size());
  for (const auto& [type, want] : expected) {
    ASSERT_TRUE(counts.count(type)) << "no " << type << " tensor in the shared models";
    EXPECT_EQ(counts.at(type), want) << type;
  }
}

}  // namespace
}  // namespace rayo
