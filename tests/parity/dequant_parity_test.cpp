// Dequantization parity with llama.cpp: for every tensor of every shared model,
// shared/reference/dequant/MODEL.json records ggml's type and dims, the float64
// sum and sum of squares of all dequantized values, and exact values at a few
// flat indices. Our reference dequantizer must reproduce the samples bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "quant/dequantize.h"
#include "quant/tensor_type.h"
#include "support/paths.h"

namespace rayo {
namespace {

// Every model with a dequantization reference (types: F32, F16, BF16, Q4_0,
// Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K).
const char* const kModels[] = {
    "llama-2-tiny-random",  "stories260K",          "synth-llama-f16",    "synth-llama-q2_k",
    "synth-llama-q3_k_m",   "synth-llama-q4_0",     "synth-llama-q4_1",   "synth-llama-q4_k_m",
    "synth-llama-q5_0",     "synth-llama-q5_1",     "synth-llama-q5_k_m", "synth-llama-q6_k",
    "synth-llama-q8_0",     "synth-qwen2-q4_k_m",   "synth-qwen2-q8_0",   "synth-qwen3-bf16",
    "synth-qwen3-q4_0",     "synth-qwen3-q4_k_m",   "synth-qwen3-q5_k_m", "synth-qwen3-q6_k",
    "synth-qwen3-q8_0",     "tinystories-656k-f16", "tinystories-656k-q8_0",
};

class DequantParity : public ::testing::TestWithParam<const char*> {};

TEST_P(DequantParity, MatchesLlamaCpp) {
  RAYO_REQUIRE_SHARED();
  const std::string model = GetParam();
  std::ifstream in(test::shared_path("reference/dequant/" + model + ".json"));
  ASSERT_TRUE(in) << "missing reference for " << model;
  const auto ref = nlohmann::json::parse(in);
  const auto file = gguf::File::open(test::shared_path("models/" + ref.at("model").get<std::string>()).string());

  const auto& tensors = ref.at("tensors");
  EXPECT_EQ(tensors.size(), file.tensors().size()) << "tensor count";
  for (const auto& expect : tensors) {
    const std::string name = expect.at("name").get<std::string>();
    SCOPED_TRACE(model + " / " + name);
    const gguf::TensorInfo* t = file.find_tensor(name);
    ASSERT_NE(t, nullptr) << "tensor missing from the file";
    EXPECT_EQ(std::string(type_name(t->type)), expect.at("type").get<std::string>());
    EXPECT_EQ(t->ne, expect.at("ne").get<std::vector<uint64_t>>());
    ASSERT_EQ(t->n_elements, expect.at("n").get<uint64_t>());
    ASSERT_TRUE(quant::can_dequantize(t->type)) << type_name(t->type);

    // Row by row, as the engine reads weights.
    std::vector<float> values(t->n_elements);
    const uint64_t row_len = t->ne.at(0);
    const uint64_t row_size = row_bytes(t->type, row_len);
    for (uint64_t r = 0; r < t->rows(); ++r)
      quant::dequantize_row(t->type, t->data + r * row_size, values.data() + r * row_len,
                            static_cast<int64_t>(row_len));

    // The reference summed in float64 too, but possibly in another order. Two
    // float64 summations of the same n float values differ by at most about
    // n * 2^-52 * sum|x| (cancellation can make that large relative to the
    // sum itself), so the tolerance is 1e-6 relative plus that bound. A single
    // wrong value changes the sums by far more, and the samples catch the rest.
    double sum = 0, sumsq = 0, sum_abs = 0;
    for (float v : values) {
      sum += v;
      sumsq += static_cast<double>(v) * v;
      sum_abs += std::fabs(v);
    }
    const double ref_sum = expect.at("sum").get<double>();
    const double ref_sumsq = expect.at("sumsq").get<double>();
    const double order_bound = static_cast<double>(values.size()) * 0x1p-52;
    EXPECT_NEAR(sum, ref_sum, 1e-6 * std::fabs(ref_sum) + order_bound * sum_abs);
    EXPECT_NEAR(sumsq, ref_sumsq, 1e-6 * ref_sumsq + order_bound * sumsq);

    // JSON holds the float values exactly (as float64); compare bit for bit.
    for (const auto& sample : expect.at("samples")) {
      const uint64_t index = sample.at(0).get<uint64_t>();
      ASSERT_LT(index, values.size());
      EXPECT_EQ(values[index], static_cast<float>(sample.at(1).get<double>())) << "index " << index;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, DequantParity, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return name;
                         });

// A reference added to shared/ must not be silently left out of the list above.
TEST(DequantParityCoverage, EveryReferenceFileIsTested) {
  RAYO_REQUIRE_SHARED();
  const std::set<std::string> listed(std::begin(kModels), std::end(kModels));
  int found = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::shared_path("reference/dequant"))) {
    if (entry.path().extension() != ".json") continue;
    ++found;
    EXPECT_TRUE(listed.count(entry.path().stem().string())) << entry.path().filename() << " is not tested";
  }
  EXPECT_EQ(found, static_cast<int>(listed.size()));
}

}  // namespace
}  // namespace rayo
