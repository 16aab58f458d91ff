// Whisper tiny.en on rayo's graph (CPU backend) against CTranslate2's float32
// intermediates for u07_punct (shared/whisper/reference/u07_punct): the
// encoder's output, the first decoder step's logits, the greedy tokens; and
// the runner's reuse of kept keys and values (incremental steps and beam
// forks give the logits a full recomputation gives).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "common/error.h"
#include "support/npy.h"
#include "support/paths.h"
#include "support/real_model.h"
#include "whisper/graph_runner.h"
#include "whisper/whisper_spec.h"

namespace rayo::whisper {
namespace {

constexpr int32_t kSot = 50257, kNoTimestamps = 50362;

class WhisperGraph : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::real_whisper_absent().empty() || test::shared_dir().empty()) return;
    files_ = new WhisperFiles(load_ct2_whisper(test::real_whisper_dir().string()));
    runner_ = new GraphWhisperRunner(*files_, GraphRunnerOptions{{"cpu", 2}, 4});
    const auto input = test::read_npy(test::shared_path("whisper/reference/u07_punct/u07_punct.encoder_input_80x3000.npy"));
    window_ = new std::vector<float>(input.values.begin(), input.values.end());
    runner_->encode(*window_);
  }
  static void TearDownTestSuite() {
    delete runner_;
    delete window_;
    delete files_;
  }
  void SetUp() override {
    if (const std::string why = test::real_whisper_absent(); !why.empty()) GTEST_SKIP() << why;
    RAYO_REQUIRE_SHARED();
  }

  static WhisperFiles* files_;
  static GraphWhisperRunner* runner_;
  static std::vector<float>* window_;
};
WhisperFiles* WhisperGraph::files_ = nullptr;
GraphWhisperRunner* WhisperGraph::runner_ = nullptr;
std::vector<float>* WhisperGraph::window_ = nullptr;

TEST_F(WhisperGraph, EncoderOutputMatchesCTranslate2Float32) {
  const auto ref = test::read_npy(test::shared_path("whisper/reference/u07_punct/u07_punct.encoder_out_float32.npy"));
  const auto out = runner_->encoder_output();
  ASSERT_EQ(out.size(), ref.values.size());
  double max_diff = 0, sum_diff = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double d = std::abs(out[i] - ref.values[i]);
    max_diff = std::max(max_diff, d);
    sum_diff += d;
  }
  // Both multiply the same f16 weights in f32; what differs is the order of
  // float sums (and an erf within 1.5e-7), over 4 layers of values up to ~12.
  EXPECT_LT(max_diff, 2e-3);
  EXPECT_LT(sum_diff / out.size(), 1e-4);
}

TEST_F(WhisperGraph, FirstStepLogitsMatchCTranslate2Float32) {
  runner_->encode(*window_);
  const auto ref = test::read_npy(test::shared_path("whisper/reference/u07_punct/u07_punct.step0_logits_float32.npy"));
  std::vector<float> logits;
  const std::vector<std::vector<int32_t>> seqs{{kSot, kNoTimestamps}};
  runner_->decode(seqs, logits);
  ASSERT_EQ(logits.size(), ref.values.size());
  double max_diff = 0;
  int compared = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (ref.values[i] < -1e30) continue;  // suppressed in the reference
    max_diff = std::max(max_diff, std::abs(logits[i] - ref.values[i]));
    ++compared;
  }
  EXPECT_GT(compared, 51000);
  EXPECT_LT(max_diff, 5e-3);
  EXPECT_EQ(std::max_element(logits.begin(), logits.end()) - logits.begin(), 16314);  // " Wait"
}

TEST_F(WhisperGraph, GreedyTokensMatchCTranslate2) {
  runner_->encode(*window_);
  const std::vector<int32_t> expected{16314, 11, 644, 30, 1400, 11, 645, 11, 645, 13, 1320,
                                      338,   407, 644, 314, 531, 13, 314, 531, 11,  2245, 13};
  const WhisperSpec& spec = files_->spec;
  std::vector<std::vector<int32_t>> seqs{{kSot, kNoTimestamps}};
  std::vector<float> logits;
  const int64_t before = runner_->decoded_tokens();
  for (int step = 0; step < 40; ++step) {
    runner_->decode(seqs, logits);
    for (int32_t id : spec.suppress_ids) logits[id] = -INFINITY;
    if (step == 0)
      for (int32_t id : spec.suppress_ids_begin) logits[id] = -INFINITY;
    for (size_t id = spec.no_timestamps; id < logits.size(); ++id) logits[id] = -INFINITY;  // no timestamps
    const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (next == spec.eot) break;
    seqs[0].push_back(next);
  }
  EXPECT_EQ(std::vector<int32_t>(seqs[0].begin() + 2, seqs[0].end()), expected);
  // Each step computed its one new token: the prompt once, then a token a step.
  EXPECT_EQ(runner_->decoded_tokens() - before, 2 + static_cast<int64_t>(expected.size()));
}

// --device cuda where no GPU is usable runs on the CPU, and then with the
// CPU's f32 cache (f16 is the CUDA backend's): the logits of the CPU's runner.
TEST_F(WhisperGraph, ACudaChoiceWithoutAGpuRunsOnTheCpusF32Cache) {
  if (cuda::cuda_available()) GTEST_SKIP() << "a GPU is usable here";
  GraphWhisperRunner fallback(*files_, GraphRunnerOptions{{"cuda", 2}, 1});
  EXPECT_EQ(fallback.backend().name(), "cpu");
  fallback.encode(*window_);
  runner_->encode(*window_);
  const std::vector<std::vector<int32_t>> seqs{{kSot, kNoTimestamps, 16314, 11}};
  std::vector<float> a, b;
  fallback.decode(seqs, a);
  runner_->decode(seqs, b);
  EXPECT_EQ(a, b);
}

// With int8 weights every matrix is quantized at load, then repacked by the
// CPU backend: the runner lets its Q8_0 copies go but the token embedding's,
// whose rows the embedding op reads (the logits multiply by its repacked copy).
// The greedy tokens stay those of the float runner's first steps.
TEST_F(WhisperGraph, Int8RunnerKeepsOnlyTheEmbeddingsCopyOfItsQuantizedMatrices) {
  GraphWhisperRunner int8(*files_, GraphRunnerOptions{{"cpu", 2}, 1, WeightFormat::Int8});
  const WhisperSpec& spec = files_->spec;
  // Kept as well: the copies (for alignment) of the position tables and of
  // the norms and biases (about 0.2 MB), which the kernels read as they are.
  const size_t embedding_q8_0 = spec.n_vocab * (spec.n_text_state / 32) * 34;
  size_t positions = 0;
  for (const char* name : {"encoder/position_encodings/encodings", "decoder/position_encodings/encodings"})
    positions += files_->model.get(name).bytes.size();
  EXPECT_GE(int8.weight_copy_bytes(), embedding_q8_0);
  EXPECT_LT(int8.weight_copy_bytes(), embedding_q8_0 + positions + (size_t{512} << 10))
      << "the encoder's and decoder's Q8_0 matrices (about 15 MB) are still held";
  int8.encode(*window_);
  std::vector<std::vector<int32_t>> seqs{{kSot, kNoTimestamps}};
  std::vector<float> logits;
  for (const int32_t expected : {16314, 11, 644, 30, 1400}) {  // " Wait, what? No,"
    int8.decode(seqs, logits);
    for (int32_t id : spec.suppress_ids) logits[id] = -INFINITY;
    for (size_t id = spec.no_timestamps; id < logits.size(); ++id) logits[id] = -INFINITY;
    const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    ASSERT_EQ(next, expected);
    seqs[0].push_back(next);
  }
}

// The same logits whether a sequence's tokens come one step at a time, all at
// once, or forked from another sequence's kept blocks (beam search).
TEST_F(WhisperGraph, KeptAndForkedSequencesGiveTheLogitsOfAFullStep) {
  const std::vector<int32_t> a{kSot, kNoTimestamps, 16314, 11, 644, 30, 1400, 11, 645, 11, 645, 13, 1320, 338, 407, 644,
                               314,  531,          13,    314, 531, 11, 2245};
  std::vector<int32_t> b = a;
  b.back() = 2666;
  std::vector<float> whole_a, whole_b, logits;
  runner_->encode(*window_);
  runner_->decode(std::vector<std::vector<int32_t>>{a}, whole_a);
  runner_->encode(*window_);
  runner_->decode(std::vector<std::vector<int32_t>>{b}, whole_b);

  runner_->encode(*window_);
  for (size_t n = 2; n < a.size(); ++n)
    runner_->decode(std::vector<std::vector<int32_t>>{std::vector<int32_t>(a.begin(), a.begin() + n)}, logits);
  runner_->decode(std::vector<std::vector<int32_t>>{a, b}, logits);  // b forks from a's kept blocks
  const size_t vocab = files_->spec.n_vocab;
  double diff_a = 0, diff_b = 0;
  for (size_t i = 0; i < vocab; ++i) {
    diff_a = std::max(diff_a, double{std::abs(logits[i] - whole_a[i])});
    diff_b = std::max(diff_b, double{std::abs(logits[vocab + i] - whole_b[i])});
  }
  EXPECT_LT(diff_a, 1e-4);
  EXPECT_LT(diff_b, 1e-4);

  std::vector<float> extra;
  runner_->encode(*window_);
  runner_->decode(std::vector<std::vector<int32_t>>{a}, logits, 0, &extra);
  ASSERT_EQ(extra.size(), vocab);
  std::vector<float> first;
  runner_->encode(*window_);
  runner_->decode(std::vector<std::vector<int32_t>>{{kSot}}, first);
  double diff_extra = 0;
  for (size_t i = 0; i < vocab; ++i) diff_extra = std::max(diff_extra, double{std::abs(extra[i] - first[i])});
  EXPECT_LT(diff_extra, 1e-4);
}

TEST_F(WhisperGraph, BadWindowsAndSequencesAreRefused) {
  EXPECT_THROW(runner_->encode(std::vector<float>(100)), Error);
  std::vector<float> logits;
  EXPECT_THROW(runner_->decode(std::vector<std::vector<int32_t>>{{}}, logits), Error);
  EXPECT_THROW(runner_->decode(std::vector<std::vector<int32_t>>{{kSot, 99999}}, logits), Error);
  EXPECT_THROW(runner_->decode(std::vector<std::vector<int32_t>>(5, {kSot}), logits), Error);
}

}  // namespace
}  // namespace rayo::whisper
