// llama.cpp's tokenizer test vectors (shared/vocab/*.gguf.inp/.out, the format of
// its test-tokenizer-0): every string must give exactly the recorded ids, without
// special tokens, and decode back to the input wherever llama.cpp's own
// detokenizer does.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "gguf/file.h"
#include "support/paths.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace rayo::tokenizer {
namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The .inp file: every string is followed by the separator, so the piece after the
// last separator is empty and is not a test string.
std::vector<std::string> read_inputs(const std::filesystem::path& p) {
  const std::string text = read_file(p);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t next = text.find(sep, pos);
    if (next == std::string::npos) break;
    out.push_back(text.substr(pos, next - pos));
    pos = next + sep.size();
  }
  if (pos < text.size()) out.push_back(text.substr(pos));
  return out;
}

// The .out file: one line of space-separated ids per string.
std::vector<std::vector<int32_t>> read_outputs(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::vector<std::vector<int32_t>> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::vector<int32_t> ids;
    int32_t id;
    while (fields >> id) ids.push_back(id);
    out.push_back(std::move(ids));
  }
  return out;
}

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

// llama.cpp's detokenizer does not give the input back when it removes spaces
// before punctuation / contractions (vocabularies with clean-up on).
bool cleanup_changes(const std::string& text) {
  for (const char* pattern : {" ?", " !", " .", " ,", " '"})
    if (text.find(pattern) != std::string::npos) return true;
  return false;
}

class TokenizerVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerVectors, EncodeMatchesLlamaCppAndDecodesBack) {
  RAYO_REQUIRE_SHARED();
  const auto base = test::shared_path("vocab/ggml-vocab-" + GetParam() + ".gguf");
  const auto file = gguf::File::open(base.string());
  const Tokenizer tok = Tokenizer::from_gguf(file);
  const auto inputs = read_inputs(base.string() + ".inp");
  const auto expected = read_outputs(base.string() + ".out");
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_GT(inputs.size(), 40u);

  size_t round_trips = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int32_t> ids = tok.encode(inputs[i], /*add_special=*/false, /*parse_special=*/false);
    EXPECT_EQ(ids, expected[i]) << "string " << i << ": '" << inputs[i] << "'\n got      " << show(ids)
                                << "\n expected " << show(expected[i]);

    const std::string decoded = tok.decode(ids, /*special=*/false);
    // SentencePiece adds a space in front and decode() removes it again, so the
    // text comes back whole, leading spaces included.
    const bool cleaned = decoded != inputs[i] && cleanup_changes(inputs[i]);
    if (!cleaned) {
      EXPECT_EQ(decoded, inputs[i]) << "string " << i;
      ++round_trips;
    }

    // Streaming: never half a character, and the same bytes in the end.
    StreamingDecoder stream(tok, /*special=*/false);
    std::string joined;
    for (int32_t id : ids) {
      const std::string chunk = stream.push(id);
      EXPECT_TRUE(is_valid_utf8(chunk)) << "string " << i;
      joined += chunk;
    }
    joined += stream.finish();
    if (!cleaned) {
      EXPECT_EQ(joined, inputs[i]) << "string " << i;
    }
  }
  EXPECT_GT(round_trips, inputs.size() / 2);
}

INSTANTIATE_TEST_SUITE_P(Vocab, TokenizerVectors,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "deepseek-coder", "deepseek-llm",
                                           "falcon", "mpt", "starcoder", "refact", "gpt2-pre-llama-bpe",
                                           "gpt2-pre-qwen2", "gpt2-pre-smollm", "gpt2-pre-gpt-4o",
                                           "gpt2-pre-deepseek-v3", "gpt2-pre-tekken"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace rayo::tokenizer
