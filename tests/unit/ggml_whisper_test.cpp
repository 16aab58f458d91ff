// whisper.cpp's ggml files: the real tiny.en written as one by `rayo convert`'s
// writer and read back holds every CTranslate2 variable's values, the same
// vocabulary, merges equal to tokenizer.json's (derived from the token ranks
// alone) and transcribes token for token as the folder does; quantized files
// read back within their quantization; a synthetic multilingual model keeps its
// special tokens; and broken files are refused in one line.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "audio/audio_stream.h"
#include "audio/mel_filters.h"
#include "common/error.h"
#include "quant/dequantize.h"
#include "support/paths.h"
#include "support/real_model.h"
#include "whisper/ct2_writer.h"
#include "whisper/ggml_whisper.h"
#include "whisper/ggml_whisper_file.h"
#include "whisper/transcriber.h"
#include "whisper/whisper_loader.h"
#include "whisper/whisper_presets.h"
#include "whisper/whisper_tokenizer.h"

namespace rayo::whisper {
namespace {

namespace fs = std::filesystem;

std::vector<float> values_of(const Ct2Variable& v) {
  const TensorType type = v.type == Ct2Type::Blocks ? v.blocks
                          : v.type == Ct2Type::F16  ? TensorType::F16
                          : v.type == Ct2Type::BF16 ? TensorType::BF16
                                                    : TensorType::F32;
  std::vector<uint8_t> aligned(v.bytes.begin(), v.bytes.end());
  std::vector<float> out(v.elements());
  quant::dequantize_row(type, aligned.data(), out.data(), static_cast<int64_t>(out.size()));
  return out;
}

bool is_float(Ct2Type t) { return t == Ct2Type::F32 || t == Ct2Type::F16 || t == Ct2Type::BF16 || t == Ct2Type::Blocks; }

// The largest difference between the two models' values of each variable; fails on a missing one.
double max_difference(const Ct2Model& a, const Ct2Model& b) {
  double worst = 0;
  for (const Ct2Variable& va : a.variables()) {
    const Ct2Variable* vb = b.find(va.name);
    EXPECT_NE(vb, nullptr) << va.name;
    if (vb == nullptr) continue;
    EXPECT_EQ(va.shape, vb->shape) << va.name;
    if (!is_float(va.type)) {
      EXPECT_EQ(a.integer(va.name), b.integer(va.name)) << va.name;
      continue;
    }
    const auto x = values_of(va), y = values_of(*vb);
    EXPECT_EQ(x.size(), y.size()) << va.name;
    for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) worst = std::max(worst, double{std::abs(x[i] - y[i])});
  }
  EXPECT_EQ(a.variables().size(), b.variables().size());
  return worst;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class GgmlWhisper : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::temp_dir("ggml-whisper"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

class RealGgmlWhisper : public GgmlWhisper {
 protected:
  void SetUp() override {
    if (const std::string why = test::real_whisper_absent(); !why.empty()) GTEST_SKIP() << why;
    GgmlWhisper::SetUp();
    folder_ = test::real_whisper_dir().string();
  }
  std::string folder_;
};

TEST_F(RealGgmlWhisper, F16FileHoldsEveryVariableTheVocabularyAndTheMerges) {
  const WhisperFiles ct2 = load_ct2_whisper(folder_);
  const std::string file = (dir_ / "ggml-tiny.en.bin").string();
  write_ggml_whisper(ct2, file, TensorType::F16);

  // As whisper.cpp's converter lays it out: f16 matrices, f32 vectors, conv biases [n, 1].
  const GgmlWhisperFile raw = GgmlWhisperFile::open(file);
  EXPECT_EQ(raw.hparams().n_vocab, 51864);
  EXPECT_EQ(raw.hparams().ftype, 1);
  EXPECT_EQ(raw.mel_filter_rows(), 80);
  EXPECT_EQ(raw.mel_filter_cols(), 201);
  EXPECT_EQ(raw.tokens().size(), 50256u);
  EXPECT_EQ(raw.tokens()[220], " ");
  ASSERT_NE(raw.find("encoder.blocks.3.attn.key.weight"), nullptr);
  EXPECT_EQ(raw.find("encoder.blocks.3.attn.key.bias"), nullptr);  // Whisper's keys have no bias
  EXPECT_EQ(raw.find("encoder.blocks.0.attn.query.weight")->type, TensorType::F16);
  EXPECT_EQ(raw.find("encoder.blocks.0.attn.query.bias")->type, TensorType::F32);
  EXPECT_EQ(raw.find("encoder.conv1.bias")->shape, (std::vector<uint64_t>{384, 1}));
  EXPECT_EQ(raw.find("encoder.conv1.weight")->shape, (std::vector<uint64_t>{384, 80, 3}));
  EXPECT_EQ(raw.find("decoder.positional_embedding")->type, TensorType::F32);
  EXPECT_EQ(raw.tensors().size(), 4u + 1 + 2 + 4 * 15 + 1 + 1 + 2 + 4 * 24);

  const WhisperFiles ggml = load_whisper(file);
  EXPECT_EQ(max_difference(ct2.model, ggml.model), 0.0);  // f16 values, exactly
  EXPECT_EQ(ggml.vocabulary, ct2.vocabulary);
  EXPECT_EQ(ggml.spec.n_text_layer, ct2.spec.n_text_layer);
  EXPECT_EQ(ggml.spec.eot, ct2.spec.eot);
  EXPECT_EQ(ggml.spec.no_speech, ct2.spec.no_speech);
  EXPECT_EQ(ggml.spec.timestamp_begin, ct2.spec.timestamp_begin);
  EXPECT_EQ(ggml.spec.suppress_ids, ct2.spec.suppress_ids);
  EXPECT_EQ(ggml.spec.suppress_ids_begin, ct2.spec.suppress_ids_begin);
  // GPT-2's 50 000 merges, rebuilt from the ranks alone, are tokenizer.json's.
  ASSERT_EQ(ct2.merges.size(), 50000u);
  EXPECT_EQ(ggml.merges, ct2.merges);
  const auto tokenizer = WhisperTokenizer::from_files(ggml);
  EXPECT_EQ(tokenizer.encode(" Hello world, it's été."), WhisperTokenizer::from_files(ct2).encode(" Hello world, it's été."));
}

TEST_F(RealGgmlWhisper, TranscribesTokenForTokenAsTheFolder) {
  RAYO_REQUIRE_SHARED();
  const std::string file = (dir_ / "ggml-tiny.en.bin").string();
  write_ggml_whisper(load_ct2_whisper(folder_), file, TensorType::F16);
  GraphRunnerOptions ro;
  ro.backend.device = "cpu";
  ro.backend.n_threads = 2;
  TranscribeOptions greedy;
  greedy.beam_size = 1;
  greedy.best_of = 1;
  const auto samples = audio::load_audio(test::shared_path("whisper/audio/u07_punct.wav").string());
  const Transcript from_folder = Transcriber(folder_, ro).transcribe(samples, greedy);
  const Transcript from_file = Transcriber(file, ro).transcribe(samples, greedy);
  ASSERT_EQ(from_file.segments.size(), from_folder.segments.size());
  for (size_t i = 0; i < from_file.segments.size(); ++i) {
    EXPECT_EQ(from_file.segments[i].tokens, from_folder.segments[i].tokens);
    EXPECT_EQ(from_file.segments[i].start, from_folder.segments[i].start);
    EXPECT_EQ(from_file.segments[i].end, from_folder.segments[i].end);
  }
  // faster-whisper's float32 greedy reading (reference/faster-whisper-greedy-f32-timestamps.json).
  EXPECT_EQ(from_file.text(), "Wait, what? No, no, no. That's not what I said. I said, stop.");
}

TEST_F(RealGgmlWhisper, QuantizedFilesReadBackWithinTheirQuantization) {
  const WhisperFiles ct2 = load_ct2_whisper(folder_);
  for (const auto& [type, bound] : {std::pair{TensorType::Q8_0, 0.01}, std::pair{TensorType::Q5_1, 0.05},
                                    std::pair{TensorType::Q4_0, 0.12}}) {
    SCOPED_TRACE(type_name(type));
    const std::string file = (dir_ / "q.bin").string();
    write_ggml_whisper(ct2, file, type);
    const GgmlWhisperFile raw = GgmlWhisperFile::open(file);
    EXPECT_EQ(raw.hparams().ftype, type == TensorType::Q8_0 ? 2007 : type == TensorType::Q5_1 ? 2009 : 2002);
    EXPECT_EQ(raw.find("decoder.blocks.0.mlp.0.weight")->type, type);
    EXPECT_EQ(raw.find("decoder.token_embedding.weight")->type, type);
    EXPECT_EQ(raw.find("encoder.conv2.weight")->type, TensorType::F16);  // 3-D: not quantized
    EXPECT_EQ(raw.find("encoder.positional_embedding")->type, TensorType::F32);
    const WhisperFiles ggml = load_whisper(file);
    // The matrices keep the file's blocks, byte for byte; Q, K and V stacked by rows.
    const Ct2Variable& fc1 = ggml.model.get("decoder/layer_0/ffn/linear_0/weight");
    EXPECT_EQ(fc1.type, Ct2Type::Blocks);
    EXPECT_EQ(fc1.blocks, type);
    const GgmlTensor& mlp0 = *raw.find("decoder.blocks.0.mlp.0.weight");
    EXPECT_TRUE(std::equal(fc1.bytes.begin(), fc1.bytes.end(), mlp0.bytes.begin(), mlp0.bytes.end()));
    const Ct2Variable& qkv = ggml.model.get("encoder/layer_1/self_attention/linear_0/weight");
    ASSERT_EQ(qkv.type, Ct2Type::Blocks);
    const GgmlTensor& value = *raw.find("encoder.blocks.1.attn.value.weight");
    ASSERT_EQ(qkv.bytes.size(), 3 * value.bytes.size());
    EXPECT_TRUE(std::equal(value.bytes.begin(), value.bytes.end(), qkv.bytes.begin() + 2 * value.bytes.size()));
    EXPECT_EQ(ggml.model.get("decoder/embeddings/weight").type, Ct2Type::Blocks);
    EXPECT_EQ(ggml.model.get("encoder/conv1/weight").type, Ct2Type::F16);
    EXPECT_EQ(ggml.model.get("encoder/layer_0/self_attention/linear_0/bias").type, Ct2Type::F32);
    const double worst = max_difference(ct2.model, ggml.model);
    EXPECT_GT(worst, 0.0);
    EXPECT_LT(worst, bound);

    // Written again in its own type, each tensor keeps its bytes (not quantized twice).
    const std::string again = (dir_ / "again.bin").string();
    write_ggml_whisper(ggml, again, type);
    const GgmlWhisperFile reread = GgmlWhisperFile::open(again);
    ASSERT_EQ(reread.tensors().size(), raw.tensors().size());
    for (const GgmlTensor& t : raw.tensors()) {
      const GgmlTensor* u = reread.find(t.name);
      ASSERT_NE(u, nullptr) << t.name;
      EXPECT_EQ(u->type, t.type) << t.name;
      EXPECT_TRUE(std::equal(t.bytes.begin(), t.bytes.end(), u->bytes.begin(), u->bytes.end())) << t.name;
    }
  }
}

// Q, K and V quantized unlike each other (a file from another tool) cannot be
// one variable of blocks: that variable is read as f32, exactly, and the
// others keep their blocks.
TEST_F(GgmlWhisper, PartsOfDifferentTypesReadAsFloats) {
  WhisperPreset p = whisper_preset("tiny.en");
  p.n_layer = 1;
  p.n_text_layer = 1;
  const auto folder = dir_ / "m";
  write_ct2_whisper(p, 3, folder.string());
  const WhisperFiles ct2 = load_ct2_whisper(folder.string());
  const std::string q8 = (dir_ / "q8.bin").string(), q4 = (dir_ / "q4.bin").string();
  write_ggml_whisper(ct2, q8, TensorType::Q8_0);
  write_ggml_whisper(ct2, q4, TensorType::Q4_0);
  // q8's tensors, but the encoder's key projection from q4 (the same extents, fewer bytes).
  const GgmlWhisperFile a = GgmlWhisperFile::open(q8), b = GgmlWhisperFile::open(q4);
  {
    const audio::MelFilters filters = audio::slaney_mel_filters(80, 400, 16000);
    GgmlWhisperWriter w((dir_ / "mixed.bin").string(), a.hparams(), filters.weights, filters.n_mels, filters.n_bins,
                        a.tokens());
    for (const GgmlTensor& t : a.tensors()) {
      const GgmlTensor& from = t.name == "encoder.blocks.0.attn.key.weight" ? *b.find(t.name) : t;
      w.add(from.name, from.shape, from.type, from.bytes);
    }
    w.finish();
  }
  const WhisperFiles mixed = load_whisper((dir_ / "mixed.bin").string());
  EXPECT_EQ(mixed.model.get("encoder/layer_0/self_attention/linear_0/weight").type, Ct2Type::F32);
  EXPECT_EQ(mixed.model.get("decoder/layer_0/self_attention/linear_0/weight").type, Ct2Type::Blocks);
  const WhisperFiles plain = load_whisper(q8);
  const auto x = values_of(mixed.model.get("encoder/layer_0/self_attention/linear_0/weight"));
  const auto y = values_of(plain.model.get("encoder/layer_0/self_attention/linear_0/weight"));
  ASSERT_EQ(x.size(), y.size());
  const size_t d = x.size() / 3;
  for (size_t i : {size_t{0}, d - 1, 2 * d, x.size() - 1}) EXPECT_EQ(x[i], y[i]) << i;  // Q and V as q8's
  EXPECT_NE(std::vector<float>(x.begin() + d, x.begin() + 2 * d), std::vector<float>(y.begin() + d, y.begin() + 2 * d));
}

TEST_F(GgmlWhisper, MultilingualLargeV3VocabularyKeepsItsSpecialTokens) {
  // A large-v3 layout (128 mels, 100 languages, <|nospeech|>) at tiny's width.
  WhisperPreset p = whisper_preset("tiny");
  p.n_mels = 128;
  p.n_layer = 2;
  p.n_text_layer = 1;  // distil-whisper's shallower decoder
  p.vocabulary = whisper_preset("large-v3").vocabulary;
  const auto folder = dir_ / "synthetic";
  write_ct2_whisper(p, 7, folder.string());
  const WhisperFiles ct2 = load_ct2_whisper(folder.string());
  const std::string file = (dir_ / "ggml.bin").string();
  write_ggml_whisper(ct2, file, TensorType::F16);
  const WhisperFiles ggml = load_whisper(file);
  EXPECT_EQ(max_difference(ct2.model, ggml.model), 0.0);
  EXPECT_EQ(ggml.vocabulary, ct2.vocabulary);
  EXPECT_EQ(ggml.spec.n_vocab, 51866u);
  EXPECT_EQ(ggml.spec.n_mels, 128u);
  EXPECT_EQ(ggml.spec.n_audio_layer, 2u);
  EXPECT_EQ(ggml.spec.n_text_layer, 1u);
  EXPECT_EQ(ggml.spec.sot, 50258);
  EXPECT_EQ(ggml.spec.no_speech, 50363);
  EXPECT_EQ(ggml.spec.timestamp_begin, 50365);
  EXPECT_EQ(ggml.spec.lang_ids, ct2.spec.lang_ids);
  EXPECT_EQ(WhisperTokenizer::from_files(ggml).language_token("yue"), 50358);
}

TEST_F(GgmlWhisper, BrokenFilesAreRefusedInOneLine) {
  WhisperPreset p = whisper_preset("tiny.en");
  p.n_layer = 1;
  const auto folder = dir_ / "m";
  write_ct2_whisper(p, 1, folder.string());
  const std::string good = (dir_ / "good.bin").string();
  write_ggml_whisper(load_ct2_whisper(folder.string()), good, TensorType::F16);
  const std::string bytes = read_text(good);
  ASSERT_NO_THROW(load_whisper(good));

  auto refused = [&](const std::string& name, const std::string& content, const std::string& message) {
    const auto path = dir_ / name;
    std::ofstream(path, std::ios::binary) << content;
    try {
      (void)load_whisper(path.string());
      ADD_FAILURE() << name << " was accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(message), std::string::npos) << name << ": " << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  };
  refused("half.bin", bytes.substr(0, bytes.size() / 2), "truncated");
  refused("header.bin", bytes.substr(0, 20), "truncated");
  refused("gguf.bin", "GGUF" + bytes.substr(4), "not a Whisper model");
  refused("text.bin", "hello, this is not a model", "not a Whisper model");
  std::string vocab = bytes;
  const int32_t too_many = 60000;
  std::memcpy(vocab.data() + 4, &too_many, 4);
  refused("vocab.bin", vocab, "no Whisper model has");
  std::string mels = bytes;
  const int32_t ninety = 90;
  std::memcpy(mels.data() + 4 + 9 * 4, &ninety, 4);
  refused("mels.bin", mels, "90 mel bins");
  std::string negative = bytes;
  const int32_t minus = -5;
  std::memcpy(negative.data() + 8, &minus, 4);
  refused("negative.bin", negative, "not a size");
  // A file without its last tensor: whichever it is, the model needs it.
  const GgmlWhisperFile file = GgmlWhisperFile::open(good);
  const GgmlTensor& last = file.tensors().back();
  const uint64_t header = 12 + 4 * last.shape.size() + last.name.size();
  refused("missing.bin", bytes.substr(0, last.offset - header), "no tensor '" + last.name + "'");
  refused("nothing", "", "not a Whisper model");
  try {
    (void)load_whisper((dir_ / "absent.bin").string());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no such file or folder"), std::string::npos) << e.what();
  }
}

TEST_F(GgmlWhisper, AVocabularyWithEndOfTextReadsAsOneWithout) {
  // convert-h5-to-ggml.py writes Hugging Face's vocab.json, <|endoftext|> included.
  WhisperPreset p = whisper_preset("tiny.en");
  p.n_layer = 1;
  const auto folder = dir_ / "m";
  write_ct2_whisper(p, 1, folder.string());
  const std::string plain = (dir_ / "plain.bin").string();
  write_ggml_whisper(load_ct2_whisper(folder.string()), plain, TensorType::F16);
  std::string bytes = read_text(plain);
  const GgmlWhisperFile file = GgmlWhisperFile::open(plain);
  const GgmlTensor& first = file.tensors().front();
  const uint64_t vocab_end = first.offset - (12 + 4 * first.shape.size() + first.name.size());
  const uint64_t count_at = 4 + 11 * 4 + 8 + 4 * uint64_t{80} * 201;
  int32_t count = 0;
  std::memcpy(&count, bytes.data() + count_at, 4);
  ASSERT_EQ(count, 50256);
  ++count;
  std::memcpy(bytes.data() + count_at, &count, 4);
  const std::string eot = "<|endoftext|>";
  const auto length = static_cast<uint32_t>(eot.size());
  bytes.insert(vocab_end, std::string(reinterpret_cast<const char*>(&length), 4) + eot);
  const auto with_eot = dir_ / "with-eot.bin";
  std::ofstream(with_eot, std::ios::binary) << bytes;
  const WhisperFiles a = load_whisper(plain), b = load_whisper(with_eot.string());
  EXPECT_EQ(b.vocabulary, a.vocabulary);
  EXPECT_EQ(b.spec.eot, 50256);
  EXPECT_EQ(max_difference(a.model, b.model), 0.0);
}

TEST(GgmlWhisperFileFormat, UnknownTypesAndShapesAreRefused) {
  // A header, no mel filters, no tokens, then one tensor of an unknown type.
  std::vector<uint8_t> bytes;
  auto put = [&](int32_t v) { bytes.insert(bytes.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4); };
  put(static_cast<int32_t>(kGgmlMagic));
  for (int32_t v : {51864, 1500, 384, 6, 4, 448, 384, 6, 4, 80, 1}) put(v);
  put(0);
  put(0);
  put(0);
  const auto header = bytes;
  put(2);
  put(1);
  put(99);  // no ggml type has this id
  put(4);
  put(4);
  bytes.push_back('x');
  EXPECT_THROW(GgmlWhisperFile::from_bytes(bytes), Error);
  try {
    (void)GgmlWhisperFile::from_bytes(bytes);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown ggml type 99"), std::string::npos) << e.what();
  }
  bytes = header;
  put(9);  // rank 9
  put(1);
  put(0);
  EXPECT_THROW(GgmlWhisperFile::from_bytes(bytes), Error);
  bytes = header;
  put(1);
  put(1);
  put(8);   // Q8_0
  put(33);  // not whole 32-value blocks
  bytes.push_back('x');
  EXPECT_THROW(GgmlWhisperFile::from_bytes(bytes), Error);
}

// Damaged files, by the hundred: cut anywhere, or a word overwritten anywhere
// (header sizes, lengths, extents, type ids), the reader refuses them in one
// line or reads a file that holds together; it never reads past the end
// (the sanitizer builds run this too).
TEST_F(GgmlWhisper, DamagedFilesAreRefusedOrReadNeverOverrun) {
  const std::string path = (dir_ / "small.bin").string();
  {
    GgmlWhisperHparams h{51864, 1500, 64, 2, 1, 448, 64, 2, 1, 80, 1};
    const std::vector<float> filters(80 * 201, 0.5f);
    std::vector<std::string> tokens;
    for (int i = 0; i < 300; ++i) tokens.push_back(std::string(static_cast<size_t>(1 + i % 7), static_cast<char>('a' + i % 26)));
    GgmlWhisperWriter w(path, h, filters, 80, 201, tokens);
    const std::vector<uint8_t> f16(2 * 64 * 32, 1), f32(4 * 64, 2), q8(34 * 2 * 64, 3);
    const uint64_t matrix[] = {64, 32}, vector[] = {64}, blocks[] = {64, 64};
    w.add("encoder.blocks.0.attn.query.weight", matrix, TensorType::F16, f16);
    w.add("encoder.blocks.0.attn.query.bias", vector, TensorType::F32, f32);
    w.add("decoder.token_embedding.weight", blocks, TensorType::Q8_0, q8);
    w.finish();
  }
  const std::string good = read_text(path);
  const auto bytes_of = [](const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); };
  ASSERT_EQ(GgmlWhisperFile::from_bytes(bytes_of(good)).tensors().size(), 3u);
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  int refused = 0;
  for (int i = 0; i < 400; ++i) {
    std::string damaged = good;
    if (i % 2 == 0) {
      damaged.resize(next() % good.size());
    } else {
      // Mostly the header, the vocabulary's lengths and the tensor headers, where sizes live.
      const size_t at = (i % 4 == 1 ? next() % 128 : next() % (good.size() - 4)) & ~size_t{3};
      const uint32_t word = static_cast<uint32_t>(next()) >> (next() % 32);
      std::memcpy(damaged.data() + at, &word, 4);
    }
    try {
      (void)GgmlWhisperFile::from_bytes(bytes_of(damaged));
    } catch (const Error& e) {
      ++refused;
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(refused, 180);  // nearly every cut, and many overwritten words
}

}  // namespace
}  // namespace rayo::whisper
