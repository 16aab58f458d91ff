// CTranslate2's int8 weights (whisper/ct2_int8.h): an int8 matrix and its
// float32 scale a row read as q / scale, exactly in f32 and with f16's
// rounding of 1 / scale in Q8_0; a matrix without its scale, or with one scale
// for the whole matrix (int16 models), is refused in one line.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "quant/blocks.h"
#include "support/paths.h"
#include "whisper/ct2_int8.h"
#include "whisper/ct2_writer.h"
#include "whisper/weight_store.h"

namespace rayo::whisper {
namespace {

struct Var {
  std::string name;
  std::vector<uint32_t> shape;
  Ct2Type type;
  std::vector<uint8_t> bytes;
};

Ct2Model model_of(const std::vector<Var>& vars, const std::string& file) {
  const std::string path = (test::temp_dir("ct2-int8-unit") / file).string();
  Ct2ModelWriter w(path, "WhisperSpec", 3, static_cast<uint32_t>(vars.size()));
  for (const Var& v : vars) w.add(v.name, v.shape, v.type, v.bytes);
  w.finish({});
  return Ct2Model::open(path);
}

std::vector<uint8_t> floats(const std::vector<float>& x) {
  std::vector<uint8_t> b(4 * x.size());
  std::memcpy(b.data(), x.data(), b.size());
  return b;
}

std::string error_of(const Ct2Model& m, const std::string& name) {
  try {
    (void)ct2_int8_scale(m, m.get(name));
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Ct2Int8, MatricesReadAsQOverTheirRowsScale) {
  std::vector<uint8_t> q(2 * 64);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<uint8_t>(static_cast<int8_t>(int(i % 255) - 127));
  const std::vector<float> scale = {127.0f / 0.5f, 127.0f / 3.0f};
  const Ct2Model m = model_of({{"w", {2, 64}, Ct2Type::I8, q},
                               {"w_scale", {2}, Ct2Type::F32, floats(scale)},
                               {"flag", {}, Ct2Type::I8, {1}}},
                              "good.bin");
  EXPECT_EQ(ct2_int8_scale(m, m.get("flag")), nullptr);  // a scalar, not a matrix
  const Ct2Variable* s = ct2_int8_scale(m, m.get("w"));
  ASSERT_NE(s, nullptr);
  std::vector<float> exact(128);
  ct2_int8_to_f32(m.get("w"), *s, 0, 2, exact.data());
  for (size_t i = 0; i < exact.size(); ++i)
    EXPECT_EQ(exact[i], static_cast<float>(static_cast<int8_t>(q[i])) / scale[i / 64]) << i;
  std::vector<float> second(64);
  ct2_int8_to_f32(m.get("w"), *s, 1, 1, second.data());
  EXPECT_EQ(second[3], exact[64 + 3]);

  std::vector<quant::BlockQ8_0> blocks(4);
  ct2_int8_to_q8_0(m.get("w"), *s, reinterpret_cast<std::byte*>(blocks.data()));
  for (int b = 0; b < 4; ++b) {
    EXPECT_EQ(blocks[b].d, fp32_to_fp16(1.0f / scale[b / 2])) << b;
    for (int i = 0; i < 32; ++i) EXPECT_EQ(blocks[b].qs[i], static_cast<int8_t>(q[32 * b + i]));
  }
  const WeightStore store(m, WeightFormat::AsStored);
  EXPECT_EQ(store.type(m.get("w")), TensorType::Q8_0);
  EXPECT_EQ(std::memcmp(store.data(m.get("w")), blocks.data(), sizeof(quant::BlockQ8_0) * blocks.size()), 0);
}

TEST(Ct2Int8, AMatrixWithoutItsRowsScalesIsRefused) {
  const std::vector<uint8_t> q(2 * 32, 1);
  const Ct2Model missing = model_of({{"w", {2, 32}, Ct2Type::I8, q}}, "missing.bin");
  EXPECT_NE(error_of(missing, "w").find("has no 'w_scale'"), std::string::npos) << error_of(missing, "w");
  const Ct2Model whole = model_of({{"w", {2, 32}, Ct2Type::I8, q}, {"w_scale", {}, Ct2Type::F32, floats({2.0f})}},
                                  "int16-like.bin");
  EXPECT_NE(error_of(whole, "w").find("not one float32 for each of the 2 rows"), std::string::npos)
      << error_of(whole, "w");
  const Ct2Model half = model_of({{"w", {2, 32}, Ct2Type::I8, q}, {"w_scale", {2}, Ct2Type::F16, {0, 60, 0, 60}}},
                                 "f16-scale.bin");
  EXPECT_NE(error_of(half, "w").find("not one float32"), std::string::npos) << error_of(half, "w");
  EXPECT_THROW(WeightStore(missing, WeightFormat::Int8), Error);
}

}  // namespace
}  // namespace rayo::whisper
