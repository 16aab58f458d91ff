// Tokenizer::from_gguf on in-memory GGUF files: what it reads, and clear errors
// for files without (or with a malformed) vocabulary.
#include <gtest/gtest.h>

#include "common/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "tokenizer/tokenizer.h"

namespace rayo::tokenizer {
namespace {

gguf::File open(const gguf::Writer& w) { return gguf::File::from_bytes(w.write_bytes(std::vector<std::vector<uint8_t>>{}), "test.gguf"); }

std::string error_of(const gguf::Writer& w) {
  try {
    const auto file = open(w);
    Tokenizer::from_gguf(file);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

gguf::Writer spm_writer() {
  gguf::Writer w;
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "\xE2\x96\x81" "a"});
  w.add_f32_array("tokenizer.ggml.scores", {0, 0, 0, -1, -1, -0.5f});
  w.add_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1, 1});
  return w;
}

TEST(TokenizerGguf, ReadsAVocabularyOnlyFile) {
  auto w = spm_writer();
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  w.add_bool("tokenizer.ggml.add_bos_token", false);
  w.add_string("tokenizer.chat_template", "{{ messages }}");
  const auto file = open(w);
  const auto tok = Tokenizer::from_gguf(file);
  EXPECT_EQ(tok.n_vocab(), 6);
  EXPECT_EQ(tok.model_name(), "llama");
  EXPECT_EQ(tok.chat_template(), "{{ messages }}");
  EXPECT_FALSE(tok.add_bos());
  EXPECT_EQ(tok.encode("a", true, false), (std::vector<int32_t>{5}));
  EXPECT_TRUE(tok.is_eog(2));
  EXPECT_EQ(tok.eot(), -1);
}

TEST(TokenizerGguf, MissingOrMalformedVocabularyIsAClearError) {
  gguf::Writer none;
  none.add_string("general.architecture", "llama");
  EXPECT_NE(error_of(none).find("tokenizer.ggml.model"), std::string::npos) << error_of(none);

  gguf::Writer wrong_model;
  wrong_model.add_string("tokenizer.ggml.model", "t5x");
  wrong_model.add_string_array("tokenizer.ggml.tokens", {"a"});
  EXPECT_NE(error_of(wrong_model).find("t5x"), std::string::npos) << error_of(wrong_model);

  gguf::Writer no_tokens;
  no_tokens.add_string("tokenizer.ggml.model", "llama");
  EXPECT_NE(error_of(no_tokens).find("tokenizer.ggml.tokens"), std::string::npos);

  gguf::Writer tokens_not_strings;
  tokens_not_strings.add_string("tokenizer.ggml.model", "llama");
  tokens_not_strings.add_i32_array("tokenizer.ggml.tokens", {1, 2, 3});
  EXPECT_NE(error_of(tokens_not_strings), "");

  gguf::Writer bpe_without_merges;
  bpe_without_merges.add_string("tokenizer.ggml.model", "gpt2");
  bpe_without_merges.add_string("tokenizer.ggml.pre", "qwen2");
  bpe_without_merges.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
  EXPECT_NE(error_of(bpe_without_merges).find("merges"), std::string::npos);

  gguf::Writer unknown_pre;
  unknown_pre.add_string("tokenizer.ggml.model", "gpt2");
  unknown_pre.add_string("tokenizer.ggml.pre", "martian");
  unknown_pre.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
  unknown_pre.add_string_array("tokenizer.ggml.merges", {"a b"});
  EXPECT_NE(error_of(unknown_pre).find("martian"), std::string::npos);

  gguf::Writer w2;
  w2.add_string("tokenizer.ggml.model", "llama");
  w2.add_string_array("tokenizer.ggml.tokens", {"a", "b", "c"});
  w2.add_f32_array("tokenizer.ggml.scores", {0});
  EXPECT_NE(error_of(w2).find("scores"), std::string::npos);

  gguf::Writer bad_id_type;
  bad_id_type.add_string("tokenizer.ggml.model", "llama");
  bad_id_type.add_string_array("tokenizer.ggml.tokens", {"a", "b", "c"});
  bad_id_type.add_string("tokenizer.ggml.bos_token_id", "one");
  EXPECT_NE(error_of(bad_id_type).find("bos_token_id"), std::string::npos);
}

}  // namespace
}  // namespace rayo::tokenizer
