// The GGUF writer: what it writes, the reader reads back unchanged, streamed in
// chunks, to memory or to a file; real models survive a copy byte for byte.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "common/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "support/paths.h"

namespace rayo::gguf {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Writer every_type_writer() {
  Writer w;
  w.add("u8", MetaValue::u8(200));
  w.add("i8", MetaValue::i8(-100));
  w.add("u16", MetaValue::u16(60000));
  w.add("i16", MetaValue::i16(-30000));
  w.add("u32", MetaValue::u32(4000000000u));
  w.add("i32", MetaValue::i32(-2000000000));
  w.add("u64", MetaValue::u64(~uint64_t{0}));
  w.add("i64", MetaValue::i64(INT64_MIN));
  w.add("f32", MetaValue::f32(0.25f));
  w.add("f64", MetaValue::f64(-1e300));
  w.add("bool", MetaValue::boolean(true));
  w.add("string", MetaValue::string("héllo\n"));
  w.add_string_array("strings", {"a", "", "ccc"});
  w.add_f32_array("floats", {1.0f, -2.5f});
  w.add_i32_array("ints", {7, -8, 9});
  w.add("nested", MetaValue::array(ValueType::ARRAY,
                                   {MetaValue::array(ValueType::U8, {MetaValue::u8(1), MetaValue::u8(2)}),
                                    MetaValue::array(ValueType::U8, {}),
                                    MetaValue::array(ValueType::U8, {MetaValue::u8(3)})}));
  w.add("empty", MetaValue::array(ValueType::STRING, {}));
  return w;
}

TEST(GgufWriter, MetadataOfEveryTypeRoundTrips) {
  const Writer w = every_type_writer();
  const File f = File::from_bytes(w.write_bytes(std::vector<std::vector<uint8_t>>{}));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.metadata().size(), 17u);
  EXPECT_EQ(f.find("u8")->type(), ValueType::U8);
  EXPECT_EQ(f.get<uint32_t>("u8"), 200u);
  EXPECT_EQ(f.get<int32_t>("i8"), -100);
  EXPECT_EQ(f.get<uint32_t>("u16"), 60000u);
  EXPECT_EQ(f.get<int64_t>("i16"), -30000);
  EXPECT_EQ(f.get<uint32_t>("u32"), 4000000000u);
  EXPECT_EQ(f.get<int32_t>("i32"), -2000000000);
  EXPECT_EQ(f.get<uint64_t>("u64"), ~uint64_t{0});
  EXPECT_EQ(f.get<int64_t>("i64"), INT64_MIN);
  EXPECT_EQ(f.get<float>("f32"), 0.25f);
  EXPECT_EQ(f.get<double>("f64"), -1e300);
  EXPECT_TRUE(f.get<bool>("bool"));
  EXPECT_EQ(f.get<std::string_view>("string"), "héllo\n");
  EXPECT_EQ(f.get_string_array("strings"), (std::vector<std::string_view>{"a", "", "ccc"}));
  EXPECT_EQ(f.get_float_array("floats"), (std::vector<float>{1.0f, -2.5f}));
  EXPECT_EQ(f.get_int_array("ints"), (std::vector<int64_t>{7, -8, 9}));
  const Value& nested = *f.find("nested");
  ASSERT_EQ(nested.size(), 3u);
  EXPECT_EQ(nested.element_type(), ValueType::ARRAY);
  EXPECT_EQ(nested.at(0).size(), 2u);
  EXPECT_EQ(nested.at(1).size(), 0u);
  EXPECT_EQ(nested.at(2).at(0).as_uint(), 3u);
  EXPECT_EQ(f.find("empty")->size(), 0u);
  // Range checks of the typed accessors.
  EXPECT_EQ(error_of([&] { (void)f.get<int32_t>("u32"); }),
            "<memory>: key 'u32': expected a 32-bit integer, found u32 4000000000");
  EXPECT_EQ(error_of([&] { (void)f.get<uint32_t>("i8"); }),
            "<memory>: key 'i8': expected an unsigned integer, found i8 -100");
  EXPECT_EQ(error_of([&] { (void)f.get<int64_t>("u64"); }),
            "<memory>: key 'u64': expected an integer, found u64 18446744073709551615");
  EXPECT_EQ(error_of([&] { (void)f.get<bool>("u8"); }), "<memory>: key 'u8': expected a bool, found u8 200");
  EXPECT_EQ(error_of([&] { (void)f.get_int_array("floats"); }),
            "<memory>: key 'floats': element 0: expected an integer, found f32 1");
  EXPECT_EQ(f.find("strings")->summary(), "[string; 3] [\"a\", \"\", \"ccc\"]");
  EXPECT_EQ(f.find("nested")->summary(2), "[array; 3] [[u8; 2], [u8; 0], ...]");
}

TEST(GgufWriter, TensorsStreamInChunksWithAlignment) {
  for (uint64_t alignment : {32u, 64u, 4096u}) {
    SCOPED_TRACE(alignment);
    Writer w(alignment);
    w.add_string("general.architecture", "test");
    w.add_tensor("f32", TensorType::F32, {3, 5});  // 60 bytes: the next offset needs padding
    w.add_tensor("q4k", TensorType::Q4_K, {512, 3});
    w.add_tensor("q80", TensorType::Q8_0, {64, 2, 2, 1});
    ASSERT_EQ(w.tensors()[1].offset, (60 + alignment - 1) / alignment * alignment);
    const auto bytes = w.write_bytes([](size_t i, const WriterTensor& t, TensorSink& out) {
      // Odd-sized chunks to exercise buffering.
      std::vector<uint8_t> chunk(7);
      for (uint64_t done = 0; done < t.n_bytes;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), t.n_bytes - done));
        for (size_t k = 0; k < n; ++k) chunk[k] = static_cast<uint8_t>(i * 31 + done + k);
        out.write({chunk.data(), n});
        done += n;
      }
    });
    EXPECT_EQ(bytes.size(), w.file_size());
    const File f = File::from_bytes(bytes);
    EXPECT_EQ(f.alignment(), alignment);
    EXPECT_EQ(f.has("general.alignment"), alignment != 32);
    ASSERT_EQ(f.tensors().size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      const TensorInfo& t = f.tensors()[i];
      EXPECT_EQ(t.name, w.tensors()[i].name);
      EXPECT_EQ(t.type, w.tensors()[i].type);
      EXPECT_EQ(t.ne, w.tensors()[i].ne);
      EXPECT_EQ(t.n_bytes, w.tensors()[i].n_bytes);
      for (uint64_t k = 0; k < t.n_bytes; ++k)
        ASSERT_EQ(t.data[k], static_cast<uint8_t>(i * 31 + k)) << t.name << " byte " << k;
    }
    EXPECT_EQ(f.tensor("q4k").n_bytes, 2u * 3 * 144);
  }
}

TEST(GgufWriter, RefusesInconsistentInput) {
  Writer w;
  w.add_u32("k", 1);
  EXPECT_EQ(error_of([&] { w.add_u32("k", 2); }), "duplicate metadata key 'k'");
  EXPECT_EQ(error_of([&] { w.add_tensor("t", TensorType::Q4_K, {100, 2}); }),
            "tensor 't' has rows of 100 values, not a multiple of the Q4_K block size 256");
  EXPECT_EQ(error_of([&] { w.add_tensor("t", TensorType::F32, {4, 0}); }), "tensor 't' has a zero dimension");
  EXPECT_EQ(error_of([&] { w.add_tensor("t", TensorType::F32, {1, 1, 1, 1, 1}); }),
            "tensor 't' has 5 dimensions (expected 1 to 4)");
  w.add_tensor("t", TensorType::F32, {4});
  EXPECT_EQ(error_of([&] { w.add_tensor("t", TensorType::F32, {4}); }), "duplicate tensor name 't'");
  EXPECT_EQ(error_of([&] { (void)w.write_bytes([](size_t, const WriterTensor&, TensorSink& out) {
              std::vector<uint8_t> b(8);
              out.write(b);
            }); }),
            "tensor 't': producer wrote 8 of its 16 bytes");
  EXPECT_EQ(error_of([&] { (void)w.write_bytes([](size_t, const WriterTensor&, TensorSink& out) {
              std::vector<uint8_t> b(20);
              out.write(b);
            }); }),
            "tensor 't': producer wrote more than its 16 bytes");
  EXPECT_EQ(error_of([] { Writer bad(48); }), "GGUF alignment 48 is not a power of two up to 2^30");
}

TEST(GgufWriter, WritesFilesAtomically) {
  const auto dir = test::temp_dir("gguf-writer");
  const std::string path = (dir / "m.gguf").string();
  Writer w;
  w.add_string("general.name", "x");
  w.add_tensor("t", TensorType::F16, {8, 4});
  uint64_t last_done = 0;
  w.write_file(
      path,
      [](size_t, const WriterTensor& t, TensorSink& out) {
        std::vector<uint8_t> b(t.n_bytes, 0x3c);
        out.write(b);
      },
      [&](uint64_t done, uint64_t total) {
        last_done = done;
        EXPECT_EQ(total, w.file_size());
      });
  EXPECT_EQ(last_done, w.file_size());
  const File f = File::open(path);
  EXPECT_EQ(f.file_size(), w.file_size());
  EXPECT_EQ(f.tensor("t").data[63], 0x3c);
  // A producer that fails leaves neither the target nor a temporary file.
  const std::string bad = (dir / "bad.gguf").string();
  EXPECT_THROW(w.write_file(bad, [](size_t, const WriterTensor&, TensorSink&) { fail("boom"); }), Error);
  EXPECT_FALSE(std::filesystem::exists(bad));
  EXPECT_FALSE(std::filesystem::exists(bad + ".tmp"));
  std::filesystem::remove_all(dir);
}

// Copying a real model (metadata, then tensors) reproduces it byte for byte:
// the shared files were written by llama.cpp's writer with the same layout rules.
TEST(GgufWriter, CopiesRealModelsExactly) {
  RAYO_REQUIRE_SHARED();
  for (const char* name : {"models/stories260K.gguf", "models/synth-qwen2-q4_k_m.gguf", "models/tinystories-656k-q8_0.gguf"}) {
    SCOPED_TRACE(name);
    const std::string path = test::shared_path(name).string();
    const File src = File::open(path);
    Writer w(src.alignment());
    w.copy_metadata(src);
    for (const auto& t : src.tensors()) w.add_tensor(t.name, t.type, t.ne);
    const auto bytes = w.write_bytes([&](size_t i, const WriterTensor&, TensorSink& out) {
      out.write(src.tensors()[i].bytes());
    });
    const File copy = File::from_bytes(bytes);
    ASSERT_EQ(copy.metadata().size(), src.metadata().size());
    for (size_t i = 0; i < src.metadata().size(); ++i) {
      EXPECT_EQ(copy.metadata()[i].key, src.metadata()[i].key);
      EXPECT_EQ(copy.metadata()[i].value.summary(1000), src.metadata()[i].value.summary(1000));
    }
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> original((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // llama.cpp pads the file's tail to the alignment; we end at the last tensor.
    ASSERT_GE(original.size(), bytes.size());
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), original.begin()));
  }
}

}  // namespace
}  // namespace rayo::gguf
