// y[t] = W . x[t] (+ add[t]) for f16 W [ROWS][COLS] and f16 x [tokens][COLS]
// on tensor cores, f32 out (y [tokens][ROWS]): the dense product of a prompt
// step on weights decoded once per step (decode_f16.cu) instead of once per
// block of tokens, as the quantized tiles of gemm.cuh do.
//
// Why: on an H100 (2026-11-28) the f16 tile ran llama3-8b's pp512 at 6 080
// t/s, about 9% of the tensor cores' dense f16 peak, against llama.cpp's
// 9 400. Its blocks decode every weight again for each 64 tokens, about 15
// instructions per MMA, where the four schedulers of an SM issue about 4 per
// MMA at the tensor cores' rate. Here the inner loop is copies, ldmatrix and
// MMAs alone (nvcc 13, sm_90: 92 instructions per K tile, 32 of them MMAs;
// 128 registers, no spill), so it can run near the tensor cores' rate. The
// price is the f16 matrix's round trip through memory (about 5 bytes per
// weight, which a 512-token step's 1 024 FLOP per weight can cover).
// `rayo bench --kernels --kernel-path dense` times it, with and without the
// decode, beside the f16 tile; prompt graphs launch it where RAYO_PROMPT_GEMM=dense
// (dense_gemm_choice.h: uses_dense_gemm), to time whole steps on a GPU.
//
// Work split: a block of DENSE_THREADS (8 warps) computes 128 rows x 128
// tokens; warp w owns rows 64 (w % 2) .. + 64 and tokens 32 (w / 2) .. + 32:
// 4 x 4 tensor-core tiles of 16 x 8, 64 accumulators a lane (launch bounds
// of 2 blocks an SM: at most 128 registers, 128 KB of shared memory). K is
// walked DENSE_K (32) values at a time through DENSE_STAGES stages of shared
// memory filled by cp.async, DENSE_STAGES - 1 tiles ahead of the multiply.
// A stage's rows are 32 halves (four 16-byte pieces), piece p of row r stored
// at p ^ ((r / 2) % 4), so the 8 rows an ldmatrix matrix reads (and the
// 16-byte copies) fall in 8 distinct 16-byte bank groups.
//
// GLU (1: gate/up's product, the matrix's rows interleaved by decode_f16.cu's
// GLU_HALF, 8 gate rows then their 8 up rows): y[t][r] = act(gate) * up over
// ROWS / 2 outputs, act SiLU or with GELU=1 GELU-tanh (common.cuh gate_act).
// Shape macros: ROWS, COLS (a multiple of DENSE_K), GLU, GELU. Grid: (ceil(max_rows /
// DENSE_TOKENS), ceil(ROWS / DENSE_ROWS)): the token tiles of a row tile are
// adjacent, so its weights come from L2 after the first. Rows past ROWS and
// tokens past *n_rows are read (as the last ones) but not written.
#include "mma.cuh"

#define DENSE_THREADS 256
#define DENSE_ROWS 128
#define DENSE_TOKENS 128
#define DENSE_K 32
#define DENSE_STAGES 4
#define DENSE_WORDS (DENSE_K / 2)  // 32-bit words (f16 pairs) in a stage's row

#ifndef GLU
#define GLU 0
#endif
#ifndef GELU
#define GELU 0
#endif

static_assert(COLS % DENSE_K == 0, "kernel_specs: K is a multiple of 32");
static_assert(!GLU || ROWS % 16 == 0, "kernel_specs: gate/up rows come in groups of 8 of each");

// The shared memory of a block (dynamic, 64 KB: kernel_specs' kDenseGemmSharedBytes).
struct alignas(16) DenseShared {
  u32 w[DENSE_STAGES][DENSE_ROWS][DENSE_WORDS];
  u32 x[DENSE_STAGES][DENSE_TOKENS][DENSE_WORDS];
};
static_assert(sizeof(DenseShared) == 65536, "kernel_specs.h's kDenseGemmSharedBytes");

// The word of a stage row holding piece `piece` (0..3), word `word` (0..3) of it.
__device__ __forceinline__ int dense_swizzle(int row, int piece) { return 4 * (piece ^ ((row >> 1) & 3)); }

// Issues the copies of K tile kt into stage s: each thread two 16-byte pieces
// of the weights and two of the tokens.
__device__ __forceinline__ void dense_stage(const u16* w, const u16* x, long long row0, int nt, int kt, int s,
                                            DenseShared& sh) {
  const long long k0 = static_cast<long long>(kt) * DENSE_K;
RAYO_UNROLL
  for (int j = 0; j < DENSE_ROWS * 4 / DENSE_THREADS; ++j) {
    const int i = threadIdx.x + j * DENSE_THREADS, r = i / 4, piece = i % 4;
    const long long row = row0 + r < ROWS ? row0 + r : ROWS - 1;
    cp_async<16>(&sh.w[s][r][dense_swizzle(r, piece)], w + row * COLS + k0 + 8 * piece);
  }
RAYO_UNROLL
  for (int j = 0; j < DENSE_TOKENS * 4 / DENSE_THREADS; ++j) {
    const int i = threadIdx.x + j * DENSE_THREADS, t = i / 4, piece = i % 4;
    const long long tok = t < nt ? t : nt - 1;
    cp_async<16>(&sh.x[s][t][dense_swizzle(t, piece)], x + tok * COLS + k0 + 8 * piece);
  }
}

// Warp w's multiply of stage s: per step of 16 values of K, four A fragments
// (16 rows each) and two pairs of B fragments (16 tokens each) by ldmatrix,
// then 16 MMAs.
__device__ __forceinline__ void dense_mma(const DenseShared& sh, int s, float (&acc)[4][4][4]) {
  const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
  const int row0 = 64 * (warp % 2), tok0 = 32 * (warp / 2);
RAYO_UNROLL
  for (int ks = 0; ks < DENSE_K / 16; ++ks) {
    u32 a[4][4], b[2][4];
RAYO_UNROLL
    for (int mi = 0; mi < 4; ++mi) {
      const int r = row0 + 16 * mi + ldm_a_row(lane);
      ldmatrix_x4(a[mi], &sh.w[s][r][dense_swizzle(r, 2 * ks + ldm_a_piece(lane))]);
    }
RAYO_UNROLL
    for (int nj = 0; nj < 2; ++nj) {
      const int t = tok0 + 16 * nj + ldm_b_row(lane);
      ldmatrix_x4(b[nj], &sh.x[s][t][dense_swizzle(t, 2 * ks + ldm_b_piece(lane))]);
    }
RAYO_UNROLL
    for (int mi = 0; mi < 4; ++mi)
RAYO_UNROLL
      for (int ni = 0; ni < 4; ++ni) mma_16816(acc[mi][ni], a[mi], &b[ni / 2][2 * (ni % 2)]);
  }
}

RAYO_KERNEL RAYO_LAUNCH_BOUNDS_MIN(DENSE_THREADS, 2)
gemm_dense(const DenseGemmArgs args) {
  grid_dependency_wait();
  const int n = *args.n_rows;
  const int t0 = blockIdx.x * DENSE_TOKENS;
  if (t0 >= n) return;
  const int nt = n - t0 < DENSE_TOKENS ? n - t0 : DENSE_TOKENS;
  const long long row0 = static_cast<long long>(blockIdx.y) * DENSE_ROWS;
  const u16* x = args.x + static_cast<long long>(t0) * COLS;
  RAYO_DYNAMIC_SHARED(DenseShared, sh);
  constexpr int kTiles = COLS / DENSE_K;
  float acc[4][4][4];
RAYO_UNROLL
  for (int mi = 0; mi < 4; ++mi)
RAYO_UNROLL
    for (int ni = 0; ni < 4; ++ni)
RAYO_UNROLL
      for (int i = 0; i < 4; ++i) acc[mi][ni][i] = 0.0f;
  // The first DENSE_STAGES - 1 tiles in flight; a group per tile, empty or not,
  // so that the wait below counts tiles.
RAYO_UNROLL
  for (int s = 0; s < DENSE_STAGES - 1; ++s) {
    if (s < kTiles) dense_stage(args.w, x, row0, nt, s, s, sh);
    cp_async_commit();
  }
  for (int kt = 0; kt < kTiles; ++kt) {
    cp_async_wait<DENSE_STAGES - 2>();  // tile kt has landed (this thread's copies) ...
    __syncthreads();  // ... everyone's; and the multiply of tile kt - 1 is done with its stage
    const int next = kt + DENSE_STAGES - 1;
    if (next < kTiles) dense_stage(args.w, x, row0, nt, next, next % DENSE_STAGES, sh);
    cp_async_commit();
    dense_mma(sh, kt % DENSE_STAGES, acc);
  }
  cp_async_wait<0>();  // only empty groups are left

  const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
  const int g = lane / 4, t = lane % 4;
#if GLU
  // Rows 16m + g and 16m + 8 + g (accumulators i and i + 2) are gate and up
  // of output row 8m + g.
RAYO_UNROLL
  for (int mi = 0; mi < 4; ++mi)
RAYO_UNROLL
    for (int ni = 0; ni < 4; ++ni)
RAYO_UNROLL
      for (int i = 0; i < 2; ++i) {
        const long long row16 = row0 + 64 * (warp % 2) + 16 * mi;
        const int tok = 32 * (warp / 2) + 8 * ni + 2 * t + i;
        if (row16 < ROWS && tok < nt)
          args.y[static_cast<long long>(t0 + tok) * (ROWS / 2) + row16 / 2 + g] =
              gate_act<GELU != 0>(acc[mi][ni][i]) * acc[mi][ni][i + 2];
      }
#else
RAYO_UNROLL
  for (int mi = 0; mi < 4; ++mi)
RAYO_UNROLL
    for (int ni = 0; ni < 4; ++ni)
RAYO_UNROLL
      for (int i = 0; i < 4; ++i) {
        const long long row = row0 + 64 * (warp % 2) + 16 * mi + g + 8 * (i / 2);
        const int tok = 32 * (warp / 2) + 8 * ni + 2 * t + i % 2;
        if (row < ROWS && tok < nt) {
          const long long at = static_cast<long long>(t0 + tok) * ROWS + row;
          args.y[at] = args.add != nullptr ? acc[mi][ni][i] + args.add[at] : acc[mi][ni][i];
        }
      }
#endif
}
