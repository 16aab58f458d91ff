#include "backends/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_features.h"
#include "common/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rayo::cpu {

namespace {
constexpr int kChunk = 16;  // positions converted and applied at a time
constexpr int kMaxHeadDim = 256;

// Scores kept per query: positions 0..max_pos, rounded up to whole chunks.
int64_t padded_length(int32_t max_pos) { return (static_cast<int64_t>(max_pos) + kChunk) / kChunk * kChunk; }

// Scratch layout, in floats: keys [kChunk][D], values [kChunk][D],
// accumulators [n][D], scores [n][padded_length(max_pos)].
size_t scratch_floats(int head_dim, int n, int32_t max_pos) {
  return 2 * static_cast<size_t>(kChunk) * head_dim + static_cast<size_t>(n) * (head_dim + padded_length(max_pos));
}
}  // namespace

bool attention_tile_supported(int head_dim) {
  return active_isa() >= Isa::Avx2 && head_dim > 0 && head_dim % 8 == 0 && head_dim <= kMaxHeadDim;
}

size_t attention_tile_scratch_bytes(int head_dim, int n, int32_t max_pos) {
  return sizeof(float) * scratch_floats(head_dim, n, max_pos);
}

#if defined(__x86_64__)
namespace {
#define RAYO_AVX2 __attribute__((target("avx2,fma,f16c")))

// The dot products of q with keys k[0..4) (rows of D floats), each summed in
// exactly the order dot_f32_f16 / dot_f32 (f16_rows.cpp) use: two 8-lane
// accumulators over alternate blocks of 8, a trailing block into the first,
// then (lo + hi) halves and ((0 + 2) + (1 + 3)). Same order, same rounding: the
// tile gives the reference's scores bit for bit.
RAYO_AVX2 inline __m128 dot4(const float* q, const float* k, int D) {
  __m256 a0[4], a1[4];
  for (int j = 0; j < 4; ++j) a0[j] = a1[j] = _mm256_setzero_ps();
  int d = 0;
  for (; d + 16 <= D; d += 16) {
    const __m256 q0 = _mm256_loadu_ps(q + d), q1 = _mm256_loadu_ps(q + d + 8);
    for (int j = 0; j < 4; ++j) {
      a0[j] = _mm256_fmadd_ps(q0, _mm256_load_ps(k + j * D + d), a0[j]);
      a1[j] = _mm256_fmadd_ps(q1, _mm256_load_ps(k + j * D + d + 8), a1[j]);
    }
  }
  if (d < D) {
    const __m256 q0 = _mm256_loadu_ps(q + d);
    for (int j = 0; j < 4; ++j) a0[j] = _mm256_fmadd_ps(q0, _mm256_load_ps(k + j * D + d), a0[j]);
  }
  __m128 w[4];
  for (int j = 0; j < 4; ++j) {
    const __m256 v = _mm256_add_ps(a0[j], a1[j]);
    w[j] = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  }
  _MM_TRANSPOSE4_PS(w[0], w[1], w[2], w[3]);  // w[c] now holds component c of each key's sum
  return _mm_add_ps(_mm_add_ps(w[0], w[2]), _mm_add_ps(w[1], w[3]));
}

// acc[0 .. 8 NB) += sum_c p[c] * v[c][0 .. 8 NB), in order of c; v rows D floats apart.
template <int NB>
RAYO_AVX2 inline void accumulate_block(float* acc, const float* p, const float* v, int n_keys, int D) {
  __m256 r[NB];
  for (int b = 0; b < NB; ++b) r[b] = _mm256_load_ps(acc + 8 * b);
  for (int c = 0; c < n_keys; ++c) {
    const __m256 pc = _mm256_set1_ps(p[c]);
    for (int b = 0; b < NB; ++b) r[b] = _mm256_fmadd_ps(pc, _mm256_load_ps(v + c * D + 8 * b), r[b]);
  }
  for (int b = 0; b < NB; ++b) _mm256_store_ps(acc + 8 * b, r[b]);
}

RAYO_AVX2 void accumulate(float* acc, const float* p, const float* v, int n_keys, int D) {
  for (int d0 = 0; d0 < D; d0 += 64) {
    float* a = acc + d0;
    const float* vv = v + d0;
    switch (std::min(64, D - d0) / 8) {
      case 1: accumulate_block<1>(a, p, vv, n_keys, D); break;
      case 2: accumulate_block<2>(a, p, vv, n_keys, D); break;
      case 3: accumulate_block<3>(a, p, vv, n_keys, D); break;
      case 4: accumulate_block<4>(a, p, vv, n_keys, D); break;
      case 5: accumulate_block<5>(a, p, vv, n_keys, D); break;
      case 6: accumulate_block<6>(a, p, vv, n_keys, D); break;
      case 7: accumulate_block<7>(a, p, vv, n_keys, D); break;
      default: accumulate_block<8>(a, p, vv, n_keys, D); break;
    }
  }
}

// One cache row's slice of D values (f16 or f32) as f32.
RAYO_AVX2 void load_row(const void* row, bool f16, int64_t offset, float* dst, int D) {
  if (f16) {
    const auto* h = static_cast<const uint16_t*>(row) + offset;
    for (int d = 0; d < D; d += 8)
      _mm256_store_ps(dst + d, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + d))));
  } else {
    std::memcpy(dst, static_cast<const float*>(row) + offset, sizeof(float) * D);
  }
}

RAYO_AVX2 void tile_avx2(const KvCache& cache, const AttentionTile& t, float* scratch) {
  const int D = t.head_dim, n = t.n;
  int32_t max_pos = 0, min_first = INT32_MAX;
  for (int i = 0; i < n; ++i) {
    max_pos = std::max(max_pos, t.pos[i]);
    min_first = std::min(min_first, t.first ? t.first[i] : 0);
  }
  auto first = [&](int i) { return t.first ? t.first[i] : 0; };
  // Chunks start at `base`, the chunk holding the first position any query
  // sees; scores are kept from there (score j of query i at scores[i][j - base]).
  const int32_t base = min_first / kChunk * kChunk;
  const int64_t stride = padded_length(max_pos - base);  // scores per query
  float* keys = scratch;
  float* values = keys + kChunk * D;
  float* acc = values + kChunk * D;
  float* scores = acc + static_cast<size_t>(n) * D;
  const bool f16 = cache.config().type == graph::KvType::F16;
  const int64_t offset = static_cast<int64_t>(t.kv_head) * D;
  const __m128 scale = _mm_set1_ps(t.scale != 0.0f ? t.scale : 1.0f / std::sqrt(static_cast<float>(D)));
  // Rows of a chunk before min_first are never seen by any query (and, under a
  // window, may not be kept by the cache): zeros stand in for them.
  auto load_chunk = [&](int32_t j0, int nc, bool values_not_keys, float* dst) {
    for (int c = 0; c < nc; ++c) {
      if (j0 + c < min_first) {
        std::fill(dst + c * D, dst + (c + 1) * D, 0.0f);
        continue;
      }
      const int64_t row = t.rows[j0 + c];
      load_row(values_not_keys ? cache.value_row(t.layer, row) : cache.key_row(t.layer, row), f16, offset, dst + c * D,
               D);
    }
  };

  // Pass 1: scores of every query against every position it sees (and, for
  // whole groups of 4, the few before its first: never used).
  for (int32_t j0 = base; j0 <= max_pos; j0 += kChunk) {
    const int nc = std::min(kChunk, max_pos + 1 - j0);
    load_chunk(j0, nc, false, keys);
    // Keys past the chunk's end are read by dot4 (their scores are never used): keep them finite.
    std::fill(keys + nc * D, keys + kChunk * D, 0.0f);
    for (int i = 0; i < n; ++i) {
      if (t.pos[i] < j0 || first(i) >= j0 + kChunk) continue;
      float* s = scores + i * stride + (j0 - base);
      for (int c = 0; c <= std::min(kChunk - 1, t.pos[i] - j0); c += 4)
        _mm_storeu_ps(s + c, _mm_mul_ps(dot4(t.q[i], keys + c * D, D), scale));
    }
  }
  // Pass 2: softmax per query, as the reference computes it (exact exp, sum in double).
  for (int i = 0; i < n; ++i) {
    float* s = scores + i * stride + (first(i) - base);
    const int32_t len = t.pos[i] + 1 - first(i);
    const float max_score = *std::max_element(s, s + len);
    double sum = 0.0;
    for (int32_t j = 0; j < len; ++j) sum += (s[j] = std::exp(s[j] - max_score));
    const float inv = static_cast<float>(1.0 / sum);
    for (int32_t j = 0; j < len; ++j) s[j] *= inv;
  }
  // Pass 3: the weighted sum of values.
  std::fill(acc, acc + static_cast<size_t>(n) * D, 0.0f);
  for (int32_t j0 = base; j0 <= max_pos; j0 += kChunk) {
    const int nc = std::min(kChunk, max_pos + 1 - j0);
    load_chunk(j0, nc, true, values);
    for (int i = 0; i < n; ++i) {
      if (t.pos[i] < j0 || first(i) >= j0 + kChunk) continue;
      const int32_t from = std::max(j0, first(i));  // the query's first position in this chunk
      accumulate(acc + static_cast<size_t>(i) * D, scores + i * stride + (from - base), values + (from - j0) * D,
                 std::min(j0 + nc, t.pos[i] + 1) - from, D);
    }
  }
  for (int i = 0; i < n; ++i) std::memcpy(t.out[i], acc + static_cast<size_t>(i) * D, sizeof(float) * D);
}
}  // namespace
#endif

void attention_tile(const KvCache& cache, const AttentionTile& tile, void* scratch) {
  RAYO_CHECK(attention_tile_supported(tile.head_dim), "attention tile: head size ", tile.head_dim, " not supported");
  RAYO_CHECK(reinterpret_cast<uintptr_t>(scratch) % 32 == 0, "attention tile: scratch not 32-byte aligned");
#if defined(__x86_64__)
  tile_avx2(cache, tile, static_cast<float*>(scratch));
#else
  (void)cache;
#endif
}

}  // namespace rayo::cpu
