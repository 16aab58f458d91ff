// The non-GEMV kernels (attention, rope, RMSNorm, KV store, elementwise,
// argmax) and the fused QKV+rope+KV-store kernel run through the SIMT emulator
// against the CPU backend's ops (backends/cpu/ops.h, KvCache).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "support/simt/simt.h"
#include "backends/cuda/kernel_specs.h"
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/async_copy.cuh"
#include "backends/cuda/kernels/gemv.cuh"
#include "backends/cuda/kernels/mma.cuh"
#include "backends/cuda/kernels/flash_tile.cuh"
#include "cuda_emulated_ops_variants.inc"

#include "backends/cpu/encoder_decoder_ops.h"
#include "backends/cpu/kv_cache.h"
#include "backends/cpu/ops.h"
#include "common/strings.h"
#include "support/simt/kernel_test_util.h"
#include "support/simt/q8_reference.h"
#include "support/simt/qkv_check.h"
#include "support/simt/spec_launch.h"

namespace rayo::cuda {
namespace {

using test::kF32Eps;

// ---------------------------------------------------------------- attention
struct AttnCase {
  int head_dim, n_head, n_head_kv, chunk;
  int64_t n_ctx;
  bool emit = false;  // combine writes the q8 twin of the output
};

// A paged cache for the tests: n_blocks blocks of 16 rows, every row filled
// with random keys and values, and two sequences whose block tables list the
// blocks in scrambled orders (sequence 0 backwards, sequence 1 interleaved).
struct PagedCache {
  static constexpr int kBlock = 16;
  cpu::KvCache cache;
  int64_t kv_width = 0, max_blocks = 0;
  std::vector<int32_t> table;  // 2 x max_blocks
  PagedCache(int64_t width, int64_t max_seq_len, uint32_t seed) : kv_width(width) {
    max_blocks = (max_seq_len + kBlock - 1) / kBlock;
    const int64_t n_blocks = 2 * max_blocks + 1;
    cache.init(graph::KvCacheConfig{1, width, kBlock, n_blocks, max_seq_len, graph::KvType::F16});
    const auto kv = test::random_floats(2 * width * n_blocks * kBlock, seed);
    for (int64_t r = 0; r < n_blocks * kBlock; ++r)
      cache.store(0, r, kv.data() + 2 * r * width, kv.data() + (2 * r + 1) * width);
    for (int64_t b = 0; b < max_blocks; ++b) table.push_back(static_cast<int32_t>(max_blocks - 1 - b));
    for (int64_t b = 0; b < max_blocks; ++b) table.push_back(static_cast<int32_t>(n_blocks - 1 - 2 * b));
  }
  std::vector<int64_t> rows(int seq, int pos) const {
    std::vector<int64_t> r(pos + 1);
    for (int j = 0; j <= pos; ++j) r[j] = static_cast<int64_t>(table[seq * max_blocks + j / kBlock]) * kBlock + j % kBlock;
    return r;
  }
  const uint16_t* keys() const { return static_cast<const uint16_t*>(cache.key_row(0, 0)); }
  const uint16_t* values() const { return static_cast<const uint16_t*>(cache.value_row(0, 0)); }
};

// Every row's output of an attention kernel against the CPU backend's
// attention. Error budget: a score error d changes every softmax weight by a
// factor within exp(+-2d), so the output (a convex combination of values
// |v| <= 1) moves by at most 2d; both sides compute scores in float with at
// most head_dim/32 + 7 rounded additions on a path (d below, doubled for the
// two implementations); the weighted sums add one rounding per position of a
// warp's share (positions / 4) plus the merges of warps and splits. Rows on
// tensor cores (attention_prefill.cu) also round the scaled query to f16
// (2^-11 of each product) and every softmax weight before it multiplies the
// values (2^-11 of the output, once more for the sum l, which takes the
// weights unrounded).
template <typename OnTensorCores>
void expect_attention_matches_the_cpu(const AttnCase& c, const PagedCache& pc, const std::vector<float>& q,
                                      const std::vector<float>& out, const std::vector<int>& positions,
                                      const std::vector<int>& seqs, int64_t splits, OnTensorCores on_tensor_cores) {
  std::vector<float> scores(c.n_ctx), ref(c.head_dim);
  const int group = c.n_head / c.n_head_kv;
  const int64_t q_width = static_cast<int64_t>(c.n_head) * c.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  for (int t = 0; t < static_cast<int>(positions.size()); ++t) {
    const bool tc = on_tensor_cores(t);
    const auto cache_rows = pc.rows(seqs[t], positions[t]);
    for (int h = 0; h < c.n_head; ++h) {
      const float* qh = q.data() + t * q_width + h * c.head_dim;
      cpu::attention_head(pc.cache, 0, h / group, c.head_dim, 1.0f / std::sqrt(static_cast<float>(c.head_dim)), qh, 0,
                          positions[t], cache_rows.data(), scores.data(), ref.data());
      double max_qk = 0;
      for (int j = 0; j <= positions[t]; ++j) {
        const auto* kr = static_cast<const uint16_t*>(pc.cache.key_row(0, cache_rows[j])) + (h / group) * c.head_dim;
        double s = 0;
        for (int i = 0; i < c.head_dim; ++i) s += std::abs(qh[i] * fp16_to_fp32(kr[i]));
        max_qk = std::max(max_qk, s);
      }
      const double q16 = tc ? 1.0 / 2048 : 0.0;
      const double d = (q16 + (c.head_dim / 32.0 + 7) * kF32Eps) * max_qk * scale;
      const double tol =
          4 * d + (tc ? 2.0 / 2048 : 0.0) + (2.0 * (positions[t] / 4.0 + 8 + splits) + 16) * kF32Eps;
      for (int i = 0; i < c.head_dim; ++i)
        ASSERT_NEAR(out[t * q_width + h * c.head_dim + i], ref[i], tol)
            << "row " << t << " (seq " << seqs[t] << ", pos " << positions[t] << ") head " << h << " dim " << i;
    }
  }
}

using AttentionKernel = void (*)(AttentionArgs);

void check_attention(const AttnCase& c, AttentionKernel attention, uint32_t seed) {
  SCOPED_TRACE(cat("head_dim ", c.head_dim, " heads ", c.n_head, "/", c.n_head_kv, " chunk ", c.chunk, " ctx ",
                   c.n_ctx));
  const int64_t kv_width = static_cast<int64_t>(c.n_head_kv) * c.head_dim;
  PagedCache pc(kv_width, c.n_ctx, seed);
  // Rows at the edges of the splits: the last position, the first, a chunk's end
  // and start; of two sequences. With more splits than a merge group (8 for
  // these contexts), the merge goes by groups: the last row's 9 splits make a
  // group of 8 and one of a single split.
  std::vector<int> positions = {static_cast<int>(c.n_ctx - 1), 0, c.chunk - 1, c.chunk, static_cast<int>(c.n_ctx / 2 + 3),
                                8 * c.chunk + 5};
  for (auto& p : positions) p = std::min<int>(p, static_cast<int>(c.n_ctx - 1));
  const std::vector<int> seqs = {0, 1, 0, 1, 1, 0};
  const int rows = static_cast<int>(positions.size());
  const int max_blocks = static_cast<int>(pc.max_blocks);
  const int64_t q_width = static_cast<int64_t>(c.n_head) * c.head_dim;
  const auto q = test::random_floats(rows * q_width, seed + 1, 2.0f);
  const int64_t splits = (c.n_ctx + c.chunk - 1) / c.chunk;
  std::vector<float> partial(rows * c.n_head * splits * attention_partial_floats(c.head_dim), NAN);
  std::vector<float> out(rows * q_width, NAN);
  std::vector<int8_t> out_q(rows * q_width);
  std::vector<test::TwinDs> out_ds(rows * q_width / 32 + 1);
  std::vector<int> counters(rows * c.n_head_kv * attention_merge_counters(splits), 0);
  const KernelSpec spec =
      attention_spec(c.n_head, c.n_head_kv, c.head_dim, c.n_ctx, PagedCache::kBlock, c.chunk, Emit{c.emit});
  const AttentionArgs args{q.data(),   pc.keys(),        pc.values(),
                           partial.data(), counters.data(), out.data(),
                           out_q.data(), reinterpret_cast<float2*>(out_ds.data()),
                           {positions.data(), seqs.data(), pc.table.data(), &max_blocks}, &rows};
  // Twice: the counters must be back to zero for the next step.
  for (int run = 0; run < 2; ++run) {
    test::launch(spec, rows, attention, args);
    for (int v : counters) ASSERT_EQ(v, 0);
  }
  if (c.emit) {
    // The q8 twin of the output, for the attention output's matmul (as gemv's).
    const auto ref = test::q8_twin(out.data(), rows, q_width);
    for (int64_t i = 0; i < rows * q_width; ++i) ASSERT_EQ(out_q[i], ref.q[i]) << i;
    for (int64_t i = 0; i < rows * q_width / 32; ++i) ASSERT_EQ(out_ds[i].x, ref.ds[i].x) << i;
  }

  expect_attention_matches_the_cpu(c, pc, q, out, positions, seqs, splits, [](int) { return false; });
}

TEST(CudaEmulatedAttention, GqaRatiosHeadDimsAndSplits) {
  check_attention({64, 8, 8, 32, 320}, att_64_8_8_32::attention, 1);     // GQA 1, 10 splits
  check_attention({80, 8, 4, 32, 320}, att_80_8_4_32::attention, 2);     // GQA 2, head_dim not a multiple of 32
  check_attention({128, 8, 2, 64, 320}, att_128_8_2_64::attention, 3);   // GQA 4
  check_attention({256, 8, 1, 32, 200}, att_256_8_1_32::attention, 4);   // GQA 8, the largest head_dim
  check_attention({64, 16, 2, 256, 600}, att_64_16_2_256::attention, 5); // production chunk, 3 splits
  check_attention({8, 8, 4, 256, 64}, att_8_8_4_256::attention, 6);      // stories260K: head_dim 8, one split
  check_attention({96, 4, 4, 16, 100}, att_96_4_4_16::attention, 7);
  check_attention({4, 2, 2, 64, 100}, att_4_2_2_64::attention, 8);  // llama-2-tiny-random: head_dim 4
  check_attention({64, 8, 2, 64, 300, true}, att_emit_64_8_2_64::attention, 9);
  // A split's positions in sub-tiles (24, 24, 16), as chunks longer than
  // 8192 / GQA positions take them.
  check_attention({64, 8, 2, 64, 300, true}, att_sub_64_8_2_64::attention, 14);
  // More splits (38) than a chunk's positions (16); the last row's merge goes
  // by five groups (8, 8, 8, 8, 6).
  check_attention({64, 8, 2, 16, 600, true}, att_64_8_2_16::attention, 10);
}

// A prompt step as the scheduler makes it: a chunk of sequence 0's prompt
// against its cached prefix (rows 0..19 at positions 50..69), then the start
// of sequence 1's prompt (rows 20..46 at positions 0..26). Tiles of 16 rows:
// [0, 16) and [32, 47) (partial) are one sequence's, on tensor cores;
// [16, 32) mixes the two and stays with the split kernel. Every row against
// the CPU backend's attention, and the twin, when written, byte for byte.
void check_prefill_attention(const AttnCase& c, AttentionKernel split, AttentionKernel flash, uint32_t seed) {
  SCOPED_TRACE(cat("head_dim ", c.head_dim, " heads ", c.n_head, "/", c.n_head_kv));
  const int64_t kv_width = static_cast<int64_t>(c.n_head_kv) * c.head_dim;
  PagedCache pc(kv_width, c.n_ctx, seed);
  std::vector<int> positions, seqs;
  for (int i = 0; i < 20; ++i) positions.push_back(50 + i), seqs.push_back(0);
  for (int i = 0; i < 27; ++i) positions.push_back(i), seqs.push_back(1);
  const int rows = static_cast<int>(positions.size());
  const int max_blocks = static_cast<int>(pc.max_blocks);
  const int64_t q_width = static_cast<int64_t>(c.n_head) * c.head_dim;
  const auto q = test::random_floats(rows * q_width, seed + 1, 2.0f);
  const int64_t splits = (c.n_ctx + c.chunk - 1) / c.chunk;
  std::vector<float> partial(rows * c.n_head * splits * attention_partial_floats(c.head_dim), NAN);
  std::vector<float> out((rows + 1) * q_width, NAN);
  std::vector<int8_t> out_q(rows * q_width);
  std::vector<test::TwinDs> out_ds(rows * q_width / 32 + 1);
  std::vector<int> counters(rows * c.n_head_kv * attention_merge_counters(splits), 0);
  const AttentionArgs args{q.data(),   pc.keys(),        pc.values(),
                           partial.data(), counters.data(), out.data(),
                           out_q.data(), reinterpret_cast<float2*>(out_ds.data()),
                           {positions.data(), seqs.data(), pc.table.data(), &max_blocks}, &rows};
  test::launch(attention_spec(c.n_head, c.n_head_kv, c.head_dim, c.n_ctx, PagedCache::kBlock, c.chunk, Emit{c.emit},
                              true),
               rows, split, args);
  for (int v : counters) ASSERT_EQ(v, 0);
  // Launched for a tile more than the rows need: it must do nothing.
  test::launch(attention_prefill_spec(c.n_head, c.n_head_kv, c.head_dim, PagedCache::kBlock, Emit{c.emit}),
               rows + kFlashTokens, flash, args);
  for (int64_t i = rows * q_width; i < (rows + 1) * q_width; ++i) ASSERT_TRUE(std::isnan(out[i])) << "row past the step";
  if (c.emit) {
    const auto ref = test::q8_twin(out.data(), rows, q_width);
    for (int64_t i = 0; i < rows * q_width; ++i) ASSERT_EQ(out_q[i], ref.q[i]) << i;
    for (int64_t i = 0; i < rows * q_width / 32; ++i) ASSERT_EQ(out_ds[i].x, ref.ds[i].x) << i;
  }
  expect_attention_matches_the_cpu(c, pc, q, out, positions, seqs, splits, [](int t) { return t < 16 || t >= 32; });
}

TEST(CudaEmulatedAttention, PromptTilesOfOneSequenceRunOnTensorCores) {
  // GQA 4, GQA 6, stories15M's shape.
  check_prefill_attention({128, 8, 2, 64, 256, true}, fa_split_128_8_2::attention, fa_128_8_2::attention_prefill, 11);
  check_prefill_attention({64, 12, 2, 64, 256}, fa_split_64_12_2::attention, fa_64_12_2::attention_prefill, 12);
  check_prefill_attention({48, 6, 6, 256, 256}, fa_split_48_6_6::attention, fa_48_6_6::attention_prefill, 13);
}

TEST(CudaEmulatedAttention, RowsPastTheStepCountAreNotWritten) {
  const int hd = 64, nh = 8, ctx = 320;
  PagedCache pc(hd * nh, ctx, 3);
  const auto q = test::random_floats(2 * hd * nh, 9);
  std::vector<int> positions = {5, 6}, seqs = {0, 0}, counters(2 * nh * attention_merge_counters(10), 0);
  std::vector<float> partial(2 * nh * 10 * attention_partial_floats(hd), 0.0f), out(2 * hd * nh, 3.0f);
  const int n = 1, mb = static_cast<int>(pc.max_blocks);
  // Launched for 2 rows (8 kv heads, 10 splits), run with 1.
  test::launch(attention_spec(nh, nh, hd, ctx, PagedCache::kBlock, 32), 2, att_64_8_8_32::attention,
               AttentionArgs{q.data(), pc.keys(), pc.values(), partial.data(), counters.data(), out.data(), nullptr,
                             nullptr, {positions.data(), seqs.data(), pc.table.data(), &mb}, &n});
  for (int i = hd * nh; i < 2 * hd * nh; ++i) ASSERT_EQ(out[i], 3.0f);
  for (int i = 0; i < hd * nh; ++i) ASSERT_NE(out[i], 3.0f);
}

// --------------------------------------------------------------------- rope
void check_rope(int n_head, int head_dim, graph::RopeParams rope, bool ff, void (*kernel)(RopeArgs), uint32_t seed) {
  SCOPED_TRACE(cat("rope heads ", n_head, " head_dim ", head_dim, " n_rot ", rope.n_rot));
  const std::vector<int> positions = {0, 1, 77, 4095, 131071};
  const int rows = static_cast<int>(positions.size());
  const int64_t w = static_cast<int64_t>(n_head) * head_dim;
  const auto x = test::random_floats(rows * w, seed);
  auto factors = test::random_floats(rope.n_rot / 2, seed + 1);
  for (auto& f : factors) f = 1.0f + 4.0f * std::abs(f);
  std::vector<float> y(rows * w), ref(w);
  test::launch(rope_spec(n_head, head_dim, rope, ff), rows, kernel,
               RopeArgs{x.data(), y.data(), ff ? factors.data() : nullptr, positions.data(), &rows});
  for (int t = 0; t < rows; ++t) {
    cpu::rope_row(x.data() + t * w, ref.data(), n_head, head_dim, rope, positions[t], ff ? factors.data() : nullptr);
    // Same angle bit for bit (same theta_scale literal, same multiplications);
    // cos/sin and the rotation are a few roundings of values <= 1.
    for (int64_t i = 0; i < w; ++i) ASSERT_NEAR(y[t * w + i], ref[i], 8 * kF32Eps) << "pos " << positions[t] << " i " << i;
  }
}

TEST(CudaEmulatedRope, NormalNeoxPartialAndFrequencyFactors) {
  graph::RopeParams r;
  r.n_rot = 64;
  r.freq_base = 10000.0f;
  check_rope(4, 64, r, false, rope_normal::rope, 1);
  r.type = graph::RopeType::NeoX;
  r.n_rot = 128;
  r.freq_base = 1e6f;
  check_rope(2, 128, r, false, rope_neox::rope, 2);
  r.n_rot = 32;
  r.freq_base = 10000.0f;
  check_rope(3, 80, r, false, rope_partial_neox::rope, 3);
  r.type = graph::RopeType::Normal;
  r.n_rot = 64;
  r.freq_base = 500000.0f;
  r.freq_scale = 0.5f;
  check_rope(2, 64, r, true, rope_ff::rope, 4);
}

// ------------------------------------------------------------------ rmsnorm
void check_rms_norm(int64_t cols, int group, float eps, void (*kernel)(RowsArgs), uint32_t seed) {
  const int rows = 3;
  const auto x = test::random_floats(rows * cols, seed, 3.0f);
  const auto w = test::random_floats(group, seed + 1);
  std::vector<float> y(rows * cols), ref(cols);
  test::launch(rms_norm_spec(cols, group, eps), rows, kernel, RowsArgs{x.data(), w.data(), y.data(), &rows});
  for (int t = 0; t < rows; ++t) {
    cpu::rms_norm_row(x.data() + t * cols, w.data(), ref.data(), cols, group, eps);
    // float sum of squares (cols/256 + 16 roundings on a path, halved by the
    // square root) against the CPU's double sum, then two products.
    const double rel = (static_cast<double>(group) / 256 + 16) * kF32Eps + 4 * kF32Eps;
    for (int64_t i = 0; i < cols; ++i) ASSERT_NEAR(y[t * cols + i], ref[i], rel * std::abs(ref[i]) + 1e-30) << i;
  }
}

TEST(CudaEmulatedRmsNorm, WholeRowsAndPerHeadGroups) {
  check_rms_norm(1000, 1000, 1e-5f, norm_row::rms_norm, 1);
  check_rms_norm(640, 80, 1e-6f, norm_head::rms_norm, 2);
}

// -------------------------------------------------------- elementwise, argmax
TEST(CudaEmulatedElementwise, AddBiasSwigluSelectRows) {
  const int cols = 777, rows = 3;
  const auto a = test::random_floats(rows * cols, 1, 4.0f), b = test::random_floats(rows * cols, 2, 4.0f);
  const int n = rows;
  std::vector<float> y(rows * cols), ref(cols);
  const RowsArgs ab{a.data(), b.data(), y.data(), &n};
  test::launch(elementwise_spec(cols, {}, "add"), rows, ew_777::add, ab);
  for (int i = 0; i < rows * cols; ++i) ASSERT_EQ(y[i], a[i] + b[i]);
  test::launch(elementwise_spec(cols, {}, "add_bias"), rows, ew_777::add_bias, ab);
  for (int i = 0; i < rows * cols; ++i) ASSERT_EQ(y[i], a[i] + b[i % cols]);
  test::launch(elementwise_spec(cols, {}, "swiglu"), rows, ew_777::swiglu, ab);
  for (int t = 0; t < rows; ++t) {
    cpu::swiglu_row(a.data() + t * cols, b.data() + t * cols, ref.data(), cols);
    for (int i = 0; i < cols; ++i) ASSERT_NEAR(y[t * cols + i], ref[i], 4 * kF32Eps * std::abs(ref[i]) + 1e-30);
  }
  const std::vector<int> sel = {2, 0};
  const int n_sel = 2;
  test::launch(elementwise_spec(cols, {}, "select_rows"), n_sel, ew_777::select_rows,
               SelectRowsArgs{a.data(), y.data(), sel.data(), nullptr, {nullptr, nullptr, nullptr}, &n_sel});
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < cols; ++i) ASSERT_EQ(y[r * cols + i], a[sel[r] * cols + i]);
}

// ----------------------------------------- encoder-decoder rows (Whisper)
// LayerNorm against the CPU's (double sums), on rows whose mean is far from 0
// (a residual stream's): float sums of cols/256 + 9 roundings on a path give
// the mean within d = (cols/256 + 9) eps (|mean| + max|x - mean|), which moves
// an output by d s |w|; the variance's relative error (twice that of its sum)
// scales y - bias; four roundings of the last expression.
TEST(CudaEmulatedLayerNorm, MatchesTheCpuOnRowsFarFromZero) {
  const int cols = 1000, rows = 3;
  auto x = test::random_floats(rows * cols, 1, 3.0f);
  const float offsets[rows] = {0.0f, 50.0f, -20.0f};
  for (int t = 0; t < rows; ++t)
    for (int i = 0; i < cols; ++i) x[t * cols + i] += offsets[t];
  auto w = test::random_floats(cols, 2, 0.1f);
  for (float& v : w) v += 1.0f;
  const auto bias = test::random_floats(cols, 3);
  std::vector<float> y(rows * cols), ref(cols);
  test::launch(layer_norm_spec(cols, 1e-5f), rows, ln_1000::layer_norm,
               LayerNormArgs{x.data(), w.data(), bias.data(), y.data(), &rows});
  const double k = static_cast<double>(cols) / 256 + 9;
  for (int t = 0; t < rows; ++t) {
    const float* xr = x.data() + t * cols;
    cpu::layer_norm_row(xr, w.data(), bias.data(), ref.data(), cols, 1e-5f);
    double mean = 0, var = 0;
    for (int i = 0; i < cols; ++i) mean += xr[i];
    mean /= cols;
    for (int i = 0; i < cols; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const double s = 1 / std::sqrt(var / cols + 1e-5);
    const double d = k * kF32Eps * (std::abs(mean) + 3.0);
    for (int i = 0; i < cols; ++i) {
      const double tol = d * s * std::abs(w[i]) + 2 * k * kF32Eps * std::abs(ref[i] - bias[i]) +
                         4 * kF32Eps * (std::abs(ref[i]) + std::abs(bias[i]));
      ASSERT_NEAR(y[t * cols + i], ref[i], tol) << "row " << t << " col " << i;
    }
  }
}

// Whisper's two convolutions' inputs: the log-mel ([channels][frames], stride
// 1) and a layer's rows ([frames][channels], stride 2), zero-padded at both ends.
TEST(CudaEmulatedConv1dUnfold, IsTheCpusUnfoldingForBothLayouts) {
  for (const bool mel : {true, false}) {
    const int channels = mel ? 80 : 48, stride = mel ? 1 : 2, in_frames = 21;
    const int out_frames = (in_frames + stride - 1) / stride;
    const auto x = test::random_floats(channels * in_frames, mel ? 1 : 2);
    std::vector<float> y(out_frames * channels * 3, -9.0f), ref(channels * 3);
    const UnfoldArgs args{x.data(), y.data(), &in_frames, &out_frames};
    if (mel)
      test::launch(conv1d_unfold_spec(channels, stride, true), out_frames, unfold_mel::conv1d_unfold, args);
    else
      test::launch(conv1d_unfold_spec(channels, stride, false), out_frames, unfold_rows::conv1d_unfold, args);
    for (int t = 0; t < out_frames; ++t) {
      cpu::conv1d_unfold_row(x.data(), channels, in_frames, mel, t, stride, ref.data());
      for (int i = 0; i < channels * 3; ++i) ASSERT_EQ(y[t * channels * 3 + i], ref[i]) << mel << " " << t << " " << i;
    }
  }
}

TEST(CudaEmulatedElementwise, GeluAndPositions) {
  const int cols = 777, rows = 3;
  const auto a = test::random_floats(rows * cols, 4, 6.0f);
  std::vector<float> y(rows * cols);
  test::launch(elementwise_spec(cols, {}, "gelu"), rows, ew_777::gelu, RowsArgs{a.data(), nullptr, y.data(), &rows});
  for (int i = 0; i < rows * cols; ++i) {
    // The exact GELU in double; erff is within 2 ulp, then three roundings.
    const double x = a[i], ref = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    ASSERT_NEAR(y[i], ref, 4 * kF32Eps * (std::abs(x) + std::abs(ref)) + 1e-30) << a[i];
  }
  // Rows take the table's row at their position, in any order.
  const auto table = test::random_floats(10 * cols, 5);
  const std::vector<int> positions = {7, 0, 9};
  test::launch(elementwise_spec(cols, {}, "add_position"), rows, ew_777::add_position,
               PositionArgs{a.data(), table.data(), positions.data(), y.data(), &rows});
  for (int t = 0; t < rows; ++t)
    for (int i = 0; i < cols; ++i) ASSERT_EQ(y[t * cols + i], a[t * cols + i] + table[positions[t] * cols + i]);
}

// Encoder-decoder attention (cross_attention.cu, shapes of the xattn variant):
// softmax(q k^T / 8) v per head in double over keys and values as the kernel
// reads them (f16-rounded from the cross memory). Budget, as the attention
// tests': scores within (head_dim/32 + 7) roundings of |s|, doubled, move the
// output twice as much; a thread's sum over len keys adds len roundings.
constexpr int kXaHeadDim = 64, kXaHeads = 3, kXaWidth = kXaHeadDim * kXaHeads, kXaCross = 37;

std::vector<float> attention_reference(const float* q, const std::vector<const float*>& k,
                                       const std::vector<const float*>& v) {
  std::vector<float> out(kXaWidth);
  for (int h = 0; h < kXaHeads; ++h) {
    std::vector<double> s(k.size());
    double m = -1e300, sum = 0;
    for (size_t j = 0; j < k.size(); ++j) {
      for (int d = 0; d < kXaHeadDim; ++d) s[j] += double{q[h * kXaHeadDim + d]} * k[j][h * kXaHeadDim + d];
      s[j] *= 0.125;
      m = std::max(m, s[j]);
    }
    for (double& x : s) sum += (x = std::exp(x - m));
    for (int d = 0; d < kXaHeadDim; ++d) {
      double acc = 0;
      for (size_t j = 0; j < k.size(); ++j) acc += s[j] * v[j][h * kXaHeadDim + d];
      out[h * kXaHeadDim + d] = static_cast<float>(acc / sum);
    }
  }
  return out;
}

double attention_budget(int64_t len) { return kF32Eps * (4.0 * (kXaHeadDim / 32 + 7) * 8 + len + 8); }

TEST(CudaEmulatedEncoderDecoderAttention, DenseOverEachSequencesRows) {
  const int rows = 7;
  const std::vector<int> seq = {0, 0, 0, 1, 1, 1, 1};
  const auto q = test::random_floats(rows * kXaWidth, 1), k = test::random_floats(rows * kXaWidth, 2),
             v = test::random_floats(rows * kXaWidth, 3);
  std::vector<float> out(rows * kXaWidth, -7.0f);
  test::launch(encoder_decoder_attention_spec("dense_attention", kXaHeads, kXaHeadDim, 40, kXaCross, 0.125f), rows,
               xattn::dense_attention, DenseAttentionArgs{q.data(), k.data(), v.data(), out.data(), seq.data(), &rows});
  for (int t = 0; t < rows; ++t) {
    std::vector<const float*> kr, vr;
    for (int j = 0; j < rows; ++j)
      if (seq[j] == seq[t]) kr.push_back(k.data() + j * kXaWidth), vr.push_back(v.data() + j * kXaWidth);
    const auto ref = attention_reference(q.data() + t * kXaWidth, kr, vr);
    for (int i = 0; i < kXaWidth; ++i)
      ASSERT_NEAR(out[t * kXaWidth + i], ref[i], attention_budget(static_cast<int64_t>(kr.size()))) << t << " " << i;
  }
}

// The encoder's attention on tensor cores (dense_attention_tc): two tiles of
// 64 rows, the first ending inside sequence 1, the second partial and holding
// the ends of sequences 1 and 2 (key tiles of 32 that straddle sequences),
// launched for one tile more than the step. Q, K, V and the probabilities are
// rounded to f16 (2^-11 each) before the tensor cores multiply them: the
// budget is 6 such roundings of the largest output.
TEST(CudaEmulatedEncoderDecoderAttention, DenseOnTensorCoresOverEachSequencesRows) {
  const int rows = 100;
  std::vector<int> seq(rows);
  for (int t = 0; t < rows; ++t) seq[t] = t < 45 ? 0 : t < 95 ? 1 : 2;
  const auto q = test::random_floats(rows * kXaWidth, 4, 3.0f), k = test::random_floats(rows * kXaWidth, 5),
             v = test::random_floats(rows * kXaWidth, 6);
  std::vector<float> out((rows + 64) * kXaWidth, -7.0f);
  test::launch(encoder_decoder_attention_spec("dense_attention_tc", kXaHeads, kXaHeadDim, 40, kXaCross, 0.125f),
               rows + 64, xattn::dense_attention_tc,
               DenseAttentionArgs{q.data(), k.data(), v.data(), out.data(), seq.data(), &rows});
  for (int t = 0; t < rows; ++t) {
    std::vector<const float*> kr, vr;
    for (int j = 0; j < rows; ++j)
      if (seq[j] == seq[t]) kr.push_back(k.data() + j * kXaWidth), vr.push_back(v.data() + j * kXaWidth);
    const auto ref = attention_reference(q.data() + t * kXaWidth, kr, vr);
    for (int i = 0; i < kXaWidth; ++i) ASSERT_NEAR(out[t * kXaWidth + i], ref[i], 6.0 / 2048) << t << " " << i;
  }
  for (size_t i = rows * kXaWidth; i < out.size(); ++i) ASSERT_EQ(out[i], -7.0f) << "row past the step written: " << i;
}

TEST(CudaEmulatedEncoderDecoderAttention, StoreThenCrossAttendTheRowsSlot) {
  // Two slots of memory; slot 0 holds other keys and values, the encoder's
  // 37 rows (sequence 0) go to slot 1.
  const std::vector<int> cross_slot = {1, 0};
  std::vector<uint16_t> k_mem(2 * kXaCross * kXaWidth), v_mem(k_mem.size());
  const auto other = test::random_floats(k_mem.size() * 2, 4);
  for (size_t i = 0; i < k_mem.size(); ++i) k_mem[i] = fp32_to_fp16(other[i]), v_mem[i] = fp32_to_fp16(other[k_mem.size() + i]);
  const auto k = test::random_floats(kXaCross * kXaWidth, 5), v = test::random_floats(kXaCross * kXaWidth, 6);
  std::vector<int> positions(kXaCross), enc_seq(kXaCross, 0);
  for (int j = 0; j < kXaCross; ++j) positions[j] = kXaCross - 1 - j;  // in any order
  test::launch(encoder_decoder_attention_spec("cross_kv_store", kXaHeads, kXaHeadDim, kXaCross, kXaCross, 0.125f),
               kXaCross, xattn::cross_kv_store,
               CrossKvStoreArgs{k.data(), v.data(), k_mem.data(), v_mem.data(), positions.data(), enc_seq.data(),
                                cross_slot.data(), &kXaCross});
  for (int j = 0; j < kXaCross; ++j)
    for (int i = 0; i < kXaWidth; ++i) {
      const size_t at = (size_t{1} * kXaCross + positions[j]) * kXaWidth + i;
      ASSERT_EQ(k_mem[at], fp32_to_fp16(k[j * kXaWidth + i]));
      ASSERT_EQ(v_mem[at], fp32_to_fp16(v[j * kXaWidth + i]));
    }
  ASSERT_EQ(k_mem[5], fp32_to_fp16(other[5]));  // slot 0 untouched

  const int rows = 3;
  const std::vector<int> seq = {0, 1, 0};
  const auto q = test::random_floats(rows * kXaWidth, 7);
  std::vector<float> out(rows * kXaWidth);
  test::launch(encoder_decoder_attention_spec("cross_attention", kXaHeads, kXaHeadDim, kXaCross, kXaCross, 0.125f),
               rows, xattn::cross_attention,
               CrossAttentionArgs{q.data(), k_mem.data(), v_mem.data(), out.data(), seq.data(), cross_slot.data(), &rows});
  std::vector<float> kf(k_mem.size()), vf(v_mem.size());
  for (size_t i = 0; i < k_mem.size(); ++i) kf[i] = fp16_to_fp32(k_mem[i]), vf[i] = fp16_to_fp32(v_mem[i]);
  for (int t = 0; t < rows; ++t) {
    std::vector<const float*> kr, vr;
    for (int j = 0; j < kXaCross; ++j) {
      const size_t row = (static_cast<size_t>(cross_slot[seq[t]]) * kXaCross + j) * kXaWidth;
      kr.push_back(kf.data() + row), vr.push_back(vf.data() + row);
    }
    const auto ref = attention_reference(q.data() + t * kXaWidth, kr, vr);
    for (int i = 0; i < kXaWidth; ++i) ASSERT_NEAR(out[t * kXaWidth + i], ref[i], attention_budget(kXaCross)) << t << " " << i;
  }
}

// ----------------------------------------------------------------- kv store
TEST(CudaEmulatedKvStore, WritesTheSameHalvesAsTheCpuCache) {
  // 3 blocks of 16 rows; sequence 0 owns blocks 2, 0; sequence 1 owns block 1.
  const int width = 160, ctx = 48;
  cpu::KvCache cache;
  cache.init(graph::KvCacheConfig{1, width, 16, 3, 32, graph::KvType::F16});
  std::vector<uint16_t> kd(ctx * width, 0xBEEF), vd(ctx * width, 0xBEEF);
  const auto k = test::random_floats(3 * width, 1, 100.0f), v = test::random_floats(3 * width, 2, 1e-3f);
  const std::vector<int> positions = {9, 0, 31}, seqs = {0, 1, 0}, table = {2, 0, 1, -1};
  const std::vector<int> rows = {2 * 16 + 9, 1 * 16 + 0, 0 * 16 + 15};
  const int n = 3, mb = 2;
  test::launch(kv_store_spec(width, 16), n, kvs_160::kv_store,
               KvStoreArgs{k.data(), v.data(), kd.data(), vd.data(), {positions.data(), seqs.data(), table.data(), &mb},
                           &n});
  for (int t = 0; t < n; ++t) cache.store(0, rows[t], k.data() + t * width, v.data() + t * width);
  for (int p = 0; p < ctx; ++p) {
    const bool written = std::find(rows.begin(), rows.end(), p) != rows.end();
    for (int i = 0; i < width; ++i) {
      if (written) {
        ASSERT_EQ(kd[p * width + i], static_cast<const uint16_t*>(cache.key_row(0, p))[i]);
        ASSERT_EQ(vd[p * width + i], static_cast<const uint16_t*>(cache.value_row(0, p))[i]);
      } else {
        ASSERT_EQ(kd[p * width + i], 0xBEEF);
      }
    }
  }
}

// ------------------------------------------------- fused QKV + rope + store
using QkvKernel = void (*)(QkvArgs);

// Blocks of 16 pairs x tt tokens. Two sequences of 64 positions in 8 blocks
// of 16 (sequence 1 first, backwards); the error bound of the GEMVs
// (gemv_tolerance in cuda_emulated_gemv_test.cpp) plus the bias add.
const test::QkvTokens kQkvTokens{{13, 0, 63, 7, 30}, {0, 1, 1, 0, 0}, {4, 5, 6, 7, 3, 2, 1, 0}, 4};
double qkv_tolerance(int64_t k, double abs_sum) { return (k / 32.0 + 26) * kF32Eps * abs_sum; }

void check_qkv(const test::QkvCase& c, QkvKernel kernel, int tt, uint32_t seed) {
  auto run = [&](const test::QkvBuffers& b) { test::launch(qkv_rope_store_spec(b.shape, tt), b.rows, kernel, b.args); };
  test::check_qkv(c, kQkvTokens, seed, run, qkv_tolerance);
}

// A llama-shaped q/k/v of `cols` columns: Q4_K q and k, Q6_K v, 8 heads over
// 2 kv heads of 64, full rotation, a fused norm.
test::QkvCase llama_qkv(int64_t cols) {
  test::QkvCase c{TensorType::Q4_K, TensorType::Q4_K, TensorType::Q6_K, cols, 8, 2, 64};
  c.rope.n_rot = 64;
  c.rope.freq_base = 500000.0f;
  c.norm = true;
  c.eps = 1e-5f;
  return c;
}

TEST(CudaEmulatedQkvRopeStore, MatchesMatMulBiasRopeAndStore) {
  test::QkvCase llama = llama_qkv(256);
  llama.ff = true;
  llama.rope.freq_factors = 0;
  check_qkv(llama, qkv_llama::qkv_rope_store, 1, 1);

  test::QkvCase qwen2{TensorType::Q8_0, TensorType::Q8_0, TensorType::Q8_0, 128, 4, 1, 32};
  qwen2.rope.type = graph::RopeType::NeoX;
  qwen2.rope.n_rot = 32;
  qwen2.rope.freq_base = 1e6f;
  qwen2.bias = true;
  qwen2.norm = true;
  qwen2.eps = 1e-6f;
  check_qkv(qwen2, qkv_qwen2::qkv_rope_store, 4, 2);

  test::QkvCase partial{TensorType::F32, TensorType::F32, TensorType::F32, 64, 4, 4, 16};
  partial.rope.type = graph::RopeType::NeoX;
  partial.rope.n_rot = 8;
  partial.rope.freq_base = 10000.0f;
  check_qkv(partial, qkv_f32_partial::qkv_rope_store, 1, 3);
}

// Two K slices a row (gemv.cuh): the sliced kernel's q and cache rows must be
// the one-slice kernel's bit for bit (and so within the reference's bounds).
void check_qkv_slices(const test::QkvCase& c, QkvKernel one, QkvKernel two, uint32_t seed) {
  auto run = [&](const test::QkvBuffers& b) {
    const int64_t qn = static_cast<int64_t>(b.rows) * c.n_head * c.head_dim;
    const int64_t kvn = 16 * 8 * static_cast<int64_t>(c.n_head_kv) * c.head_dim;  // 8 cache blocks of 16
    test::launch(qkv_rope_store_spec(b.shape, 1), b.rows, one, b.args);
    const std::vector<float> q(b.args.q_out, b.args.q_out + qn);
    const std::vector<uint16_t> k(b.args.k_cache, b.args.k_cache + kvn), v(b.args.v_cache, b.args.v_cache + kvn);
    test::launch(qkv_rope_store_spec(b.shape, 1, 2), b.rows, two, b.args);
    for (int64_t i = 0; i < qn; ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(q[i]), std::bit_cast<uint32_t>(b.args.q_out[i])) << "q " << i;
    for (int64_t i = 0; i < kvn; ++i) {
      ASSERT_EQ(k[i], b.args.k_cache[i]) << "k " << i;
      ASSERT_EQ(v[i], b.args.v_cache[i]) << "v " << i;
    }
  };
  test::check_qkv(c, kQkvTokens, seed, run, qkv_tolerance);
}

TEST(CudaEmulatedQkvRopeStore, TwoKSlicesGiveTheOneSliceBits) {
  // Q4_K/Q6_K rows of 36 units of 64 values (slice 1: 4 of them), a fused norm.
  check_qkv_slices(llama_qkv(2304), qkv_slices1_llama::qkv_rope_store, qkv_slices2_llama::qkv_rope_store, 4);
  // Q8_0 rows of 161 units of 32 values (three passes, the last giving slice
  // 1 one unit), biases; 40 pairs leave the last block 4 warps without pairs
  // (they still meet the slices' barriers).
  test::QkvCase odd{TensorType::Q8_0, TensorType::Q8_0, TensorType::Q8_0, 5152, 3, 1, 16};
  odd.rope.type = graph::RopeType::NeoX;
  odd.rope.n_rot = 8;
  odd.rope.freq_base = 10000.0f;
  odd.bias = true;
  check_qkv_slices(odd, qkv_slices1_odd::qkv_rope_store, qkv_slices2_odd::qkv_rope_store, 5);
}

}  // namespace
}  // namespace rayo::cuda
