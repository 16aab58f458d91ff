// The GGUF reader on real files: every model and vocabulary in shared/ opens,
// validates, and exposes consistent metadata and tensor views.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/error.h"
#include "gguf/file.h"
#include "support/paths.h"

namespace rayo::gguf {
namespace {

std::vector<std::filesystem::path> gguf_files_in(const std::string& folder) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(test::shared_path(folder)))
    if (e.path().extension() == ".gguf") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Invariants every valid file satisfies, checked through the public API.
void check_consistent(const File& f) {
  EXPECT_TRUE(f.version() == 2 || f.version() == 3) << f.path();
  EXPECT_EQ(f.data_offset() % f.alignment(), 0u) << f.path();
  for (const auto& entry : f.metadata()) {
    const Value* v = f.find(entry.key);
    ASSERT_NE(v, nullptr) << entry.key;
    EXPECT_EQ(v, &entry.value);
    EXPECT_FALSE(v->summary().empty());
  }
  uint64_t total = 0;
  for (const auto& t : f.tensors()) {
    EXPECT_EQ(f.find_tensor(t.name), &t);
    EXPECT_GE(t.ne.size(), 1u);
    EXPECT_LE(t.ne.size(), 4u);
    uint64_t n = 1;
    for (auto d : t.ne) n *= d;
    EXPECT_EQ(n, t.n_elements) << t.name;
    EXPECT_EQ(t.n_bytes, row_bytes(t.type, t.ne[0]) * t.rows()) << t.name;
    EXPECT_LE(f.data_offset() + t.offset + t.n_bytes, f.file_size()) << t.name;
    ASSERT_NE(t.data, nullptr);
    EXPECT_EQ(t.bytes().size(), t.n_bytes);
    total += t.n_bytes;
  }
  EXPECT_EQ(total, f.tensor_bytes());
}

TEST(GgufReader, OpensEveryModel) {
  RAYO_REQUIRE_SHARED();
  const auto files = gguf_files_in("models");
  ASSERT_GE(files.size(), 20u);
  for (const auto& path : files) {
    SCOPED_TRACE(path.string());
    const File f = File::open(path.string());
    check_consistent(f);
    EXPECT_FALSE(f.tensors().empty());
    EXPECT_FALSE(f.get<std::string_view>("general.architecture").empty());
    EXPECT_NE(f.find_tensor("token_embd.weight"), nullptr);
    EXPECT_GT(f.get_string_array("tokenizer.ggml.tokens").size(), 0u);
  }
}

TEST(GgufReader, OpensEveryVocabulary) {
  RAYO_REQUIRE_SHARED();
  const auto files = gguf_files_in("vocab");
  ASSERT_GE(files.size(), 10u);
  for (const auto& path : files) {
    SCOPED_TRACE(path.string());
    const File f = File::open(path.string());
    check_consistent(f);
    const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
    EXPECT_GT(tokens.size(), 1000u);
    EXPECT_FALSE(f.get<std::string_view>("tokenizer.ggml.model").empty());
  }
}

TEST(GgufReader, SynthLlamaQ4KMFacts) {
  RAYO_REQUIRE_SHARED();
  const File f = File::open(test::shared_path("models/synth-llama-q4_k_m.gguf").string());
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get<std::string_view>("general.architecture"), "llama");
  EXPECT_EQ(f.get<uint32_t>("llama.block_count"), 2u);
  EXPECT_EQ(f.get<uint64_t>("llama.embedding_length"), 512u);
  EXPECT_EQ(f.get<int64_t>("llama.attention.head_count"), 8);
  EXPECT_EQ(f.tensors().size(), 21u);
  const TensorInfo& embd = f.tensor("token_embd.weight");
  ASSERT_EQ(embd.ne.size(), 2u);
  EXPECT_EQ(embd.ne[0], 512u);
  EXPECT_EQ(embd.ne[1], 512u);  // vocab 512
  EXPECT_EQ(f.tensor("output_norm.weight").type, TensorType::F32);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens").size(), 512u);
  EXPECT_EQ(f.get_float_array("tokenizer.ggml.scores").size(), 512u);
  EXPECT_EQ(f.get_int_array("tokenizer.ggml.token_type").size(), 512u);
}

TEST(GgufReader, TypedAccessorsNameKeyAndFoundType) {
  RAYO_REQUIRE_SHARED();
  const std::string path = test::shared_path("models/stories260K.gguf").string();
  const File f = File::open(path);
  try {
    (void)f.get<uint32_t>("general.architecture");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": key 'general.architecture': expected an unsigned integer, found string");
  }
  try {
    (void)f.get<uint32_t>("llama.no_such_key");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": missing key 'llama.no_such_key'");
  }
  try {
    (void)f.get_string_array("llama.block_count");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("key 'llama.block_count': expected an array of strings, found u32"),
              std::string::npos)
        << e.what();
  }
  try {
    (void)f.tensor("nope.weight");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": missing tensor 'nope.weight'");
  }
  EXPECT_FALSE(f.get_optional<uint32_t>("absent.key").has_value());
  EXPECT_EQ(f.find("absent.key"), nullptr);
  EXPECT_EQ(f.find_tensor("absent"), nullptr);
}

TEST(GgufReader, MissingFileIsOneLineError) {
  try {
    (void)File::open("/nonexistent/model.gguf");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("/nonexistent/model.gguf: cannot open"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace rayo::gguf
