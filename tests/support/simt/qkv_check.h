#pragma once
// The check of the fused QKV + RoPE + KV-store kernels (qkv_rope_store.cu on
// CUDA cores, gemm_qkv_rope_store.cu on tensor cores): q, k and v of random
// weights and inputs against float64 products of the dequantized weights, the
// bias, the CPU's RoPE and the cache's f16 rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/kernel_specs.h"
#include "common/half.h"
#include "common/strings.h"
#include "graph/graph.h"
#include "quant/tensor_type.h"
#include "support/simt/kernel_test_util.h"
#include "support/simt/q8_reference.h"
#include "support/simt/simt.h"
// The kernels' argument structs at global scope, as the kernel tests have them.
#include "backends/cuda/kernels/common.cuh"

namespace rayo::test {

struct QkvCase {
  TensorType q, k, v;
  int64_t cols;
  int n_head, n_head_kv, head_dim;
  graph::RopeParams rope = {};
  bool ff = false, bias = false, norm = false;
  float eps = 0.0f;
  float x_scale = 1.0f;  // inputs uniform in [-x_scale, x_scale]
};

// Where the step's tokens go: token t to position positions[t] of sequence
// seqs[t], through a table of blocks_per_seq blocks of 16 per sequence.
struct QkvTokens {
  std::vector<int> positions, seqs, table;
  int blocks_per_seq = 0;
};

// A run of the kernel: its argument (it writes q, k_cache and v_cache), the
// step's token rows and the shape its spec is made from.
struct QkvBuffers {
  QkvArgs args;
  int rows;
  cuda::QkvShape shape;
};

// The kernel variant's shape for a case (KV cache blocks of 16 positions).
inline cuda::QkvShape qkv_shape(const QkvCase& c) {
  cuda::QkvShape s;
  s.q = c.q;
  s.k = c.k;
  s.v = c.v;
  s.cols = c.cols;
  s.n_head = c.n_head;
  s.n_head_kv = c.n_head_kv;
  s.head_dim = c.head_dim;
  s.rope = c.rope;
  s.has_freq_factors = c.ff;
  s.bias = c.bias;
  s.norm_eps = c.norm ? c.eps : -1.0f;
  s.block_size = 16;
  return s;
}

// Runs the kernel (`run`) on weights and inputs drawn from `seed`, then checks
// every token. dot_tol(K, sum of |products|) bounds one dot product's error.
inline void check_qkv(const QkvCase& c, const QkvTokens& tokens, uint32_t seed,
                      const std::function<void(const QkvBuffers&)>& run,
                      const std::function<double(int64_t, double)>& dot_tol) {
  SCOPED_TRACE(cat("qkv ", type_name(c.q), "/", type_name(c.k), "/", type_name(c.v), " heads ", c.n_head, "/",
                   c.n_head_kv, " head_dim ", c.head_dim));
  const bool quantized = !(c.q == TensorType::F32 || c.q == TensorType::F16 || c.q == TensorType::BF16);
  const int64_t qw = static_cast<int64_t>(c.n_head) * c.head_dim, kvw = static_cast<int64_t>(c.n_head_kv) * c.head_dim;
  const int64_t K = c.cols;
  const auto wq = random_weights(c.q, qw, K, seed), wk = random_weights(c.k, kvw, K, seed + 1),
             wv = random_weights(c.v, kvw, K, seed + 2);
  const auto fq = dequantized(c.q, wq, qw, K), fk = dequantized(c.k, wk, kvw, K), fv = dequantized(c.v, wv, kvw, K);
  auto gpu = [&](TensorType t, const std::vector<uint8_t>& w, int64_t rows) {
    return quantized ? gpu_matrix(t, w, rows, K) : w;
  };
  const auto gq = gpu(c.q, wq, qw), gk = gpu(c.k, wk, kvw), gv = gpu(c.v, wv, kvw);
  const auto bq = random_floats(qw, seed + 3), bk = random_floats(kvw, seed + 4), bv = random_floats(kvw, seed + 5);
  const auto nw = random_floats(K, seed + 6);
  auto ff = random_floats(c.rope.n_rot / 2, seed + 7);
  for (auto& f : ff) f = 1.0f + std::abs(f);

  const std::vector<int>& positions = tokens.positions;
  const int rows = static_cast<int>(positions.size());
  auto cache_row = [&](int t) {
    return tokens.table[tokens.seqs[t] * tokens.blocks_per_seq + positions[t] / 16] * 16 + positions[t] % 16;
  };
  const int64_t cache_rows = 16 * (*std::max_element(tokens.table.begin(), tokens.table.end()) + 1);
  const auto x = random_floats(rows * K, seed + 8, c.x_scale);
  const auto twin = q8_twin(x.data(), rows, K, quantized && c.norm ? nw.data() : nullptr);
  std::vector<float> q(rows * qw, NAN);
  std::vector<uint16_t> kc(cache_rows * kvw, 0), vc(cache_rows * kvw, 0);
  const QkvArgs args{gq.data(),
                     gk.data(),
                     gv.data(),
                     bq.data(),
                     bk.data(),
                     bv.data(),
                     x.data(),
                     {twin.q.data(), reinterpret_cast<const float2*>(twin.ds.data()), twin.ss.data()},
                     nw.data(),
                     ff.data(),
                     q.data(),
                     kc.data(),
                     vc.data(),
                     {positions.data(), tokens.seqs.data(), tokens.table.data(), &tokens.blocks_per_seq},
                     &rows};
  run(QkvBuffers{args, rows, qkv_shape(c)});

  std::vector<float> pq(qw), pk(kvw), pv(kvw), rq(qw), rk(kvw);
  std::vector<double> tq(qw), tk(kvw), tv(kvw);
  for (int t = 0; t < rows; ++t) {
    const auto xt = matmul_input(x, nw, twin, t, K, quantized, c.norm, c.eps);
    auto project = [&](const std::vector<float>& w, int64_t m, const std::vector<float>& b, std::vector<float>& out,
                       std::vector<double>& tol) {
      for (int64_t r = 0; r < m; ++r) {
        double s = 0, a = 0;
        for (int64_t k = 0; k < K; ++k) {
          s += static_cast<double>(w[r * K + k]) * xt[k];
          a += std::abs(static_cast<double>(w[r * K + k]) * xt[k]);
        }
        if (c.bias) s += b[r], a += std::abs(b[r]);
        out[r] = static_cast<float>(s);
        tol[r] = dot_tol(K, a);
      }
    };
    project(fq, qw, bq, pq, tq);
    project(fk, kvw, bk, pk, tk);
    project(fv, kvw, bv, pv, tv);
    cpu::rope_row(pq.data(), rq.data(), c.n_head, c.head_dim, c.rope, positions[t], c.ff ? ff.data() : nullptr);
    cpu::rope_row(pk.data(), rk.data(), c.n_head_kv, c.head_dim, c.rope, positions[t], c.ff ? ff.data() : nullptr);
    // A rotation mixes two values with weights <= 1: the pair's errors add up.
    auto pair_tol = [&](const std::vector<double>& tol, int64_t i) {
      double m = 0;
      for (int64_t j = (i / c.head_dim) * c.head_dim; j < (i / c.head_dim + 1) * c.head_dim; ++j) m = std::max(m, tol[j]);
      return 2 * m + 8 * kF32Eps;
    };
    for (int64_t i = 0; i < qw; ++i) ASSERT_NEAR(q[t * qw + i], rq[i], pair_tol(tq, i)) << "q row " << t << " " << i;
    // The cache holds halves: allow the f32 error plus one half rounding step.
    for (int64_t i = 0; i < kvw; ++i) {
      const float gk2 = fp16_to_fp32(kc[cache_row(t) * kvw + i]), gv2 = fp16_to_fp32(vc[cache_row(t) * kvw + i]);
      ASSERT_NEAR(gk2, rk[i], pair_tol(tk, i) + std::abs(rk[i]) / 1024 + 6e-8) << "k row " << t << " " << i;
      ASSERT_NEAR(gv2, pv[i], tv[i] + std::abs(pv[i]) / 1024 + 6e-8) << "v row " << t << " " << i;
    }
  }
}

}  // namespace rayo::test
