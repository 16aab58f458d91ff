// Portable quantized kernels, included by kernels_generic.cpp once per
// instruction set inside a namespace and a `#pragma GCC target` region, so that
// the compiler vectorizes the same source for each tier. (No includes here.)
//
// Each weight row is decoded once (kernels_decode.h: int8 q, float scale/min
// per sub-block) into the thread's scratch and then multiplied with every token
// of the tile, so the decoding cost is shared by the tokens.

// Sum of n int8 products (n = 16 or 32); vectorized by the compiler.
inline int32_t idot(const int8_t* a, const int8_t* b, int n) {
  int32_t s = 0;
  for (int i = 0; i < n; ++i) s += static_cast<int32_t>(a[i]) * static_cast<int32_t>(b[i]);
  return s;
}

inline int32_t idot16(const int8_t* a, const int8_t* b) { return idot(a, b, 16); }
inline int32_t idot32(const int8_t* a, const int8_t* b) { return idot(a, b, 32); }

// Decoded row x ActBlock32 activations (sub-blocks of 32 = blocks).
inline float dot_decoded_32(const int8_t* q, const float* scale, const float* min, const ActBlock32* x,
                            int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int32_t s = idot32(q + 32 * b, x[b].qs);
    acc += scale[b] * static_cast<float>(s) * x[b].d - min[b] * x[b].s;
  }
  return acc;
}

// Decoded row x ActBlockK activations; sub is 16 or 32.
template <int kSub>
inline float dot_decoded_k(const int8_t* q, const float* scale, const float* min, const ActBlockK* x,
                           int64_t nb) {
  constexpr int kSubs = 256 / kSub;
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* qb = q + 256 * b;
    const float* sb = scale + kSubs * b;
    const float* mb = min + kSubs * b;
    float block = 0.0f;
    for (int s = 0; s < kSubs; ++s) {
      const int32_t d = kSub == 16 ? idot16(qb + 16 * s, x[b].qs + 16 * s) : idot32(qb + 32 * s, x[b].qs + 32 * s);
      const int32_t xs = kSub == 16 ? x[b].bsum16[s] : x[b].bsum32[s];
      block += sb[s] * static_cast<float>(d) - mb[s] * static_cast<float>(xs);
    }
    acc += block * x[b].d;
  }
  return acc;
}

template <ActKind kAct, int kSub>
void quant_tile(const MatmulProblem& p, int64_t r0, int64_t r1, int64_t t0, int64_t t1,
                std::byte* scratch) {
  const MatmulWeight& w = *p.w;
  const int64_t cols = w.cols;
  const int64_t nsub = cols / kSub;
  int8_t* q = reinterpret_cast<int8_t*>(scratch);
  float* scale = reinterpret_cast<float*>(scratch + ((cols + 63) & ~int64_t{63}));
  float* min = scale + nsub;
  const uint64_t rb = row_bytes(w.type, cols);
  const auto* base = static_cast<const std::byte*>(w.data);
  for (int64_t r = r0; r < r1; ++r) {
    decode_row(w.type, base + r * rb, cols, q, scale, min);
    for (int64_t t = t0; t < t1; ++t) {
      const std::byte* xt = p.xq + t * p.xq_stride;
      float v;
      if constexpr (kAct == ActKind::Q32)
        v = dot_decoded_32(q, scale, min, reinterpret_cast<const ActBlock32*>(xt), cols / 32);
      else
        v = dot_decoded_k<kSub>(q, scale, min, reinterpret_cast<const ActBlockK*>(xt), cols / 256);
      p.y[t * p.y_stride + r] = v;
    }
  }
}

inline TileKernel select_quant_tile(TensorType type) {
  if (act_kind(type) == ActKind::Q32) return &quant_tile<ActKind::Q32, 32>;
  if (sub_block_size(type) == 16) return &quant_tile<ActKind::QK, 16>;
  return &quant_tile<ActKind::QK, 32>;
}
