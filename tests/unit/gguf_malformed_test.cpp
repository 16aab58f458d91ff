// A corpus of malformed GGUF images, built here from a valid one: each must be
// refused with its specific one-line message and offset, and no prefix or byte
// mutation of a valid file may crash the reader.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <optional>

#include "common/error.h"
#include "gguf/file.h"

namespace rayo::gguf {
namespace {

// Raw GGUF bytes with every field under the test's control, and the offsets of
// the sections so that cuts and patches land where intended.
struct RawKv {
  std::string key;
  uint32_t type;
  std::vector<uint8_t> payload;
};
struct RawTensor {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type;
  uint64_t offset;
};

void put_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
  const size_t old = out.size();
  out.resize(old + n);
  if (n) std::memcpy(out.data() + old, p, n);
}
template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  put_bytes(out, &v, sizeof v);
}
void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  put_bytes(out, s.data(), s.size());
}
template <typename T>
std::vector<uint8_t> scalar(T v) {
  std::vector<uint8_t> out;
  put(out, v);
  return out;
}
std::vector<uint8_t> string_payload(std::string_view s) {
  std::vector<uint8_t> out;
  put_string(out, s);
  return out;
}

struct Image {
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> kv_at;      // start of each metadata entry
  std::vector<uint64_t> tensor_at;  // start of each tensor info
  uint64_t infos_end = 0;
  uint64_t data_at = 0;
};

struct Spec {
  char magic[4] = {'G', 'G', 'U', 'F'};
  uint32_t version = 3;
  std::optional<uint64_t> n_tensors, n_kv;  // override the true counts
  std::vector<RawKv> kvs;
  std::vector<RawTensor> tensors;
  uint64_t alignment = 32;
  uint64_t data_bytes = 0;

  Image build() const {
    Image img;
    auto& b = img.bytes;
    put_bytes(b, magic, 4);
    put(b, version);
    put<uint64_t>(b, n_tensors.value_or(tensors.size()));
    put<uint64_t>(b, n_kv.value_or(kvs.size()));
    for (const auto& kv : kvs) {
      img.kv_at.push_back(b.size());
      put_string(b, kv.key);
      put(b, kv.type);
      put_bytes(b, kv.payload.data(), kv.payload.size());
    }
    for (const auto& t : tensors) {
      img.tensor_at.push_back(b.size());
      put_string(b, t.name);
      put<uint32_t>(b, static_cast<uint32_t>(t.ne.size()));
      for (auto d : t.ne) put(b, d);
      put(b, t.type);
      put(b, t.offset);
    }
    img.infos_end = b.size();
    img.data_at = (b.size() + alignment - 1) / alignment * alignment;
    b.resize(img.data_at + data_bytes, 0);
    for (uint64_t i = img.data_at; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 7);
    return img;
  }
};

// A valid file touching every value type, a nested array and two tensor types.
Spec valid_spec() {
  Spec s;
  // A long first entry, as real files have (descriptions, vocabularies), so that
  // a cut further on leaves the entry counts plausible and is reported as a cut.
  s.kvs.push_back({"general.description", 8, string_payload(std::string(400, 'd'))});
  s.kvs.push_back({"general.architecture", 8, string_payload("llama")});
  s.kvs.push_back({"llama.block_count", 4, scalar<uint32_t>(2)});
  s.kvs.push_back({"llama.rope.freq_base", 6, scalar<float>(10000.0f)});
  s.kvs.push_back({"general.flag", 7, scalar<uint8_t>(1)});
  s.kvs.push_back({"general.big", 12, scalar<double>(1.5)});
  s.kvs.push_back({"general.signed", 11, scalar<int64_t>(-3)});
  std::vector<uint8_t> tokens;  // array of 3 strings
  put<uint32_t>(tokens, 8);
  put<uint64_t>(tokens, 3);
  for (auto s : {"a", "bc", "<s>"}) put_string(tokens, s);
  s.kvs.push_back({"tokenizer.ggml.tokens", 9, tokens});
  std::vector<uint8_t> nested;  // array of 2 arrays of u16
  put<uint32_t>(nested, 9);
  put<uint64_t>(nested, 2);
  for (int i = 0; i < 2; ++i) {
    put<uint32_t>(nested, 2);
    put<uint64_t>(nested, 2);
    put<uint16_t>(nested, static_cast<uint16_t>(i));
    put<uint16_t>(nested, static_cast<uint16_t>(i + 10));
  }
  s.kvs.push_back({"general.nested", 9, nested});
  s.tensors.push_back({"a.weight", {4, 2}, 0, 0});        // F32, 32 bytes
  s.tensors.push_back({"b.weight", {32, 2}, 8, 32});      // Q8_0, 68 bytes
  s.data_bytes = 32 + 68;
  return s;
}

std::string error_of(std::vector<uint8_t> bytes) {
  try {
    (void)File::from_bytes(std::move(bytes), "bad.gguf");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void patch_u64(std::vector<uint8_t>& b, uint64_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); }

TEST(GgufMalformed, ValidBaseFileReads) {
  const Image img = valid_spec().build();
  const File f = File::from_bytes(img.bytes, "ok.gguf");
  EXPECT_EQ(f.get<std::string_view>("general.architecture"), "llama");
  EXPECT_EQ(f.get<uint32_t>("llama.block_count"), 2u);
  EXPECT_FLOAT_EQ(f.get<float>("llama.rope.freq_base"), 10000.0f);
  EXPECT_TRUE(f.get<bool>("general.flag"));
  EXPECT_DOUBLE_EQ(f.get<double>("general.big"), 1.5);
  EXPECT_EQ(f.get<int32_t>("general.signed"), -3);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens"), (std::vector<std::string_view>{"a", "bc", "<s>"}));
  const Value& nested = *f.find("general.nested");
  ASSERT_EQ(nested.size(), 2u);
  EXPECT_EQ(nested.at(1).element_type(), ValueType::U16);
  EXPECT_EQ(nested.at(1).at(1).as_uint(), 11u);
  EXPECT_EQ(f.data_offset(), img.data_at);
  EXPECT_EQ(f.tensor("b.weight").type, TensorType::Q8_0);
  EXPECT_EQ(f.tensor("b.weight").data, f.tensor("a.weight").data + 32);
  EXPECT_EQ(f.tensor("b.weight").data[0], static_cast<uint8_t>((img.data_at + 32) * 7));
  EXPECT_EQ(error_of(img.bytes), "");
}

TEST(GgufMalformed, TruncatedInsideEverySection) {
  const Image img = valid_spec().build();
  auto cut = [&](uint64_t n) { return error_of(std::vector<uint8_t>(img.bytes.begin(), img.bytes.begin() + n)); };
  EXPECT_EQ(cut(0), "bad.gguf: unexpected end of file in the magic (at offset 0)");
  EXPECT_EQ(cut(6), "bad.gguf: unexpected end of file in the version (at offset 4)");
  EXPECT_EQ(cut(12), "bad.gguf: unexpected end of file in the tensor count (at offset 8)");
  EXPECT_EQ(cut(20), "bad.gguf: unexpected end of file in the metadata count (at offset 16)");
  // With the counts intact but the body cut, the counts no longer fit the file.
  EXPECT_EQ(cut(30), "bad.gguf: tensor count 2 is implausible for a file of 30 bytes (at offset 8)");
  EXPECT_EQ(cut(160), "bad.gguf: tensor count 2 and metadata count 9 are implausible for a file of 160 bytes (at offset 8)");
  // Inside each metadata entry: its key length, key bytes, type, value.
  const uint64_t k1 = img.kv_at[2];
  EXPECT_EQ(cut(k1 + 3), cat("bad.gguf: unexpected end of file in the key of metadata entry 2 (at offset ", k1, ")"));
  EXPECT_EQ(cut(k1 + 10), cat("bad.gguf: string length 17 in the key of metadata entry 2 runs past the end of the file (2 bytes left) (at offset ", k1, ")"));
  const uint64_t v1 = k1 + 8 + 17 + 4;
  EXPECT_EQ(cut(v1 + 2), cat("bad.gguf: unexpected end of file in the value of key 'llama.block_count' (at offset ", v1, ")"));
  const uint64_t k6 = img.kv_at[7];  // tokens: array of strings, cut inside the third string
  const uint64_t third = k6 + 8 + 21 + 4 + 4 + 8 + 9 + 10;
  EXPECT_EQ(cut(third + 9),
            cat("bad.gguf: string length 3 in the value of key 'tokenizer.ggml.tokens' runs past the end of the file (1 bytes left) (at offset ", third, ")"));
  // Every cut inside the metadata or tensor infos fails, and only with one line.
  for (uint64_t n = 0; n < img.infos_end; ++n) {
    const std::string e = cut(n);
    EXPECT_EQ(e.rfind("bad.gguf: ", 0), 0u) << n << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << n;
  }
  // Inside the tensor infos.
  const uint64_t t1 = img.tensor_at[1];
  EXPECT_EQ(cut(t1 + 20), cat("bad.gguf: unexpected end of file in the info of tensor 'b.weight' (at offset ", t1 + 20, ")"));
  // Inside the padding between the infos and the data.
  ASSERT_GT(img.data_at, img.infos_end);
  EXPECT_EQ(cut(img.infos_end + 1),
            cat("bad.gguf: unexpected end of file in the padding before the tensor data (data would start at ",
                img.data_at, ", file has ", img.infos_end + 1, " bytes) (at offset ", img.infos_end, ")"));
  // Inside the data of the last tensor.
  EXPECT_EQ(cut(img.bytes.size() - 1),
            cat("bad.gguf: tensor 'b.weight' data [32, +68) runs past the end of the file (data section has 99 bytes) (at offset ",
                t1 + 8 + 8 + 4 + 16 + 4, ")"));
  for (uint64_t n = img.infos_end; n < img.bytes.size(); ++n) EXPECT_NE(cut(n), "") << n;
}

TEST(GgufMalformed, HeaderErrors) {
  Spec s = valid_spec();
  std::memcpy(s.magic, "GGML", 4);
  EXPECT_EQ(error_of(s.build().bytes), "bad.gguf: not a GGUF file (magic \"GGML\", expected \"GGUF\") (at offset 0)");
  s = valid_spec();
  s.version = 1;
  EXPECT_EQ(error_of(s.build().bytes),
            "bad.gguf: GGUF version 1 is not supported (re-convert the model; versions 2 and 3 are) (at offset 4)");
  s.version = 4;
  EXPECT_EQ(error_of(s.build().bytes), "bad.gguf: unsupported GGUF version 4 (supported: 2, 3) (at offset 4)");
  s.version = 0x03000000;
  EXPECT_EQ(error_of(s.build().bytes), "bad.gguf: big-endian GGUF files are not supported (at offset 4)");
  s.version = 2;
  EXPECT_EQ(error_of(s.build().bytes), "");
  const uint64_t size = valid_spec().build().bytes.size();
  s = valid_spec();
  s.n_tensors = uint64_t{1} << 60;
  EXPECT_EQ(error_of(s.build().bytes),
            cat("bad.gguf: tensor count 1152921504606846976 is implausible for a file of ", size, " bytes (at offset 8)"));
  s = valid_spec();
  s.n_kv = ~uint64_t{0};
  EXPECT_EQ(error_of(s.build().bytes),
            cat("bad.gguf: metadata count 18446744073709551615 is implausible for a file of ", size, " bytes (at offset 16)"));
  s = valid_spec();
  s.n_kv = 10;  // one more than present: the reader runs into the tensor infos and fails there
  EXPECT_NE(error_of(s.build().bytes), "");
}

TEST(GgufMalformed, MetadataErrors) {
  Spec s = valid_spec();
  Image img = s.build();
  patch_u64(img.bytes, img.kv_at[1] + 8 + 20 + 4, uint64_t{1} << 40);  // the string value's length
  EXPECT_EQ(error_of(img.bytes),
            cat("bad.gguf: string length 1099511627776 in the value of key 'general.architecture' runs past the end of the file (",
                img.bytes.size() - (img.kv_at[1] + 8 + 20 + 4 + 8), " bytes left) (at offset ", img.kv_at[1] + 32, ")"));
  img = s.build();
  patch_u64(img.bytes, img.kv_at[1], uint64_t{1} << 62);  // the key's length
  EXPECT_EQ(error_of(img.bytes).find("bad.gguf: string length 4611686018427387904 in the key of metadata entry 1 runs past"), 0u);

  s = valid_spec();
  s.kvs.push_back({"llama.block_count", 4, scalar<uint32_t>(3)});
  img = s.build();
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: duplicate key 'llama.block_count' (at offset ", img.kv_at.back(), ")"));

  s = valid_spec();
  s.kvs[2].type = 13;
  img = s.build();
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: key 'llama.block_count' has unknown value type 13 (at offset ",
                                     img.kv_at[2] + 8 + 17, ")"));

  s = valid_spec();
  s.kvs[4].payload = scalar<uint8_t>(2);
  img = s.build();
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: bool 2 in the value of key 'general.flag' is neither 0 nor 1 (at offset ",
                                     img.kv_at[4] + 8 + 12 + 4, ")"));

  s = valid_spec();  // array claiming more elements than bytes remain
  img = s.build();
  const uint64_t count_at = img.kv_at[7] + 8 + 21 + 4 + 4;
  patch_u64(img.bytes, count_at, uint64_t{1} << 50);
  EXPECT_EQ(error_of(img.bytes).find(
                "bad.gguf: array of 1125899906842624 string values in the value of key 'tokenizer.ggml.tokens' runs past"),
            0u);

  s = valid_spec();  // unknown array element type
  s.kvs[7].payload[0] = 77;
  img = s.build();
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: unknown array element type 77 in the value of key 'tokenizer.ggml.tokens' (at offset ",
                                     img.kv_at[7] + 8 + 21 + 4, ")"));

  s = valid_spec();  // arrays nested too deep
  std::vector<uint8_t> deep;
  for (int i = 0; i < 20; ++i) {
    put<uint32_t>(deep, 9);
    put<uint64_t>(deep, 1);
  }
  put<uint32_t>(deep, 0);
  put<uint64_t>(deep, 0);
  s.kvs.push_back({"deep", 9, deep});
  EXPECT_NE(error_of(s.build().bytes).find("arrays nested more than 8 deep in the value of key 'deep'"), std::string::npos);
}

TEST(GgufMalformed, AlignmentErrors) {
  for (uint32_t a : {0u, 48u, 3u}) {
    Spec s = valid_spec();
    s.kvs.push_back({"general.alignment", 4, scalar<uint32_t>(a)});
    const Image img = s.build();
    EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: general.alignment ", a, " is not a power of two (at offset ",
                                       img.kv_at.back() + 8 + 17 + 4, ")"));
  }
  Spec s = valid_spec();
  s.kvs.push_back({"general.alignment", 8, string_payload("32")});
  Image img = s.build();
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: key 'general.alignment': expected an unsigned integer, found string (at offset ",
                                     img.kv_at.back() + 8 + 17 + 4, ")"));
  // A valid non-default alignment moves the data section.
  s = valid_spec();
  s.kvs.push_back({"general.alignment", 4, scalar<uint32_t>(64)});
  s.alignment = 64;
  s.tensors[1].offset = 64;
  s.data_bytes = 64 + 68;
  img = s.build();
  const File f = File::from_bytes(img.bytes);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  EXPECT_EQ(f.data_offset(), img.data_at);
  // ...and the old offset 32 is then misaligned.
  s.tensors[1].offset = 32;
  img = s.build();
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: tensor 'b.weight' data offset 32 is not a multiple of the alignment 64 (at offset ",
                                     img.tensor_at[1] + 8 + 8 + 4 + 16 + 4, ")"));
}

TEST(GgufMalformed, TensorInfoErrors) {
  auto with = [](const std::function<void(Spec&)>& edit) {
    Spec s = valid_spec();
    edit(s);
    return s.build();
  };
  Image img = with([](Spec& s) { s.tensors[1].offset = 40; });
  const uint64_t off1 = img.tensor_at[1] + 8 + 8 + 4 + 16 + 4;
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: tensor 'b.weight' data offset 40 is not a multiple of the alignment 32 (at offset ", off1, ")"));

  img = with([](Spec& s) { s.tensors[1].offset = 64; });
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: tensor 'b.weight' data [64, +68) runs past the end of the file (data section has 100 bytes) (at offset ", off1, ")"));

  img = with([](Spec& s) { s.tensors[1].offset = ~uint64_t{0} - 31; });
  EXPECT_NE(error_of(img.bytes).find("runs past the end of the file"), std::string::npos);

  img = with([](Spec& s) { s.tensors[1].ne = {32, 0}; });
  const uint64_t dims1 = img.tensor_at[1] + 8 + 8 + 4;
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: tensor 'b.weight' has a zero dimension (ne[1] = 0) (at offset ", dims1 + 8, ")"));

  img = with([](Spec& s) { s.tensors[1].ne = {32, uint64_t{1} << 40, uint64_t{1} << 30}; });
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: tensor 'b.weight' has too many elements (dimensions overflow 63 bits) (at offset ", dims1 + 16, ")"));

  img = with([](Spec& s) { s.tensors[1].ne = {32, 1, 1, 1, 2}; });
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: tensor 'b.weight' has 5 dimensions (expected 1 to 4) (at offset ", dims1 - 4, ")"));

  img = with([](Spec& s) { s.tensors[1].ne = {}; });
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: tensor 'b.weight' has 0 dimensions (expected 1 to 4) (at offset ", dims1 - 4, ")"));

  img = with([](Spec& s) { s.tensors[1].name = "a.weight"; });
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: duplicate tensor name 'a.weight' (at offset ", img.tensor_at[1], ")"));

  img = with([](Spec& s) { s.tensors[1].type = 1234; });
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: tensor 'b.weight' has unknown type 1234 (at offset ", dims1 + 16, ")"));

  img = with([](Spec& s) { s.tensors[1].ne = {48, 2}; });
  EXPECT_EQ(error_of(img.bytes), cat("bad.gguf: tensor 'b.weight' has rows of 48 values, not a multiple of the Q8_0 block size 32 (at offset ", dims1 + 16, ")"));

  img = with([](Spec& s) { s.tensors[0].name = std::string("x\ny", 3); });
  EXPECT_EQ(error_of(img.bytes).find('\n'), std::string::npos);
}

// Every single-byte change to the valid file either still reads or fails cleanly.
TEST(GgufMalformed, ByteMutationsNeverCrash) {
  const Image img = valid_spec().build();
  size_t refused = 0;
  for (size_t i = 0; i < img.infos_end; ++i) {
    for (uint8_t v : {uint8_t{0}, uint8_t{1}, uint8_t{0x7f}, uint8_t{0x80}, uint8_t{0xff}}) {
      auto bytes = img.bytes;
      if (bytes[i] == v) continue;
      bytes[i] = v;
      try {
        const File f = File::from_bytes(std::move(bytes));
        for (const auto& e : f.metadata()) (void)e.value.summary();
        for (const auto& t : f.tensors()) ASSERT_LE(f.data_offset() + t.offset + t.n_bytes, f.file_size());
      } catch (const Error& e) {
        ++refused;
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      }
    }
  }
  EXPECT_GT(refused, img.infos_end);  // most mutations are caught
}

}  // namespace
}  // namespace rayo::gguf
