// The GEMM a kernel file multiplies with (gemm.cuh): by its GEMM_EXACT macro,
// the exact int8 tile (1), the int8 one (2) or the f16 one (0 or unset);
// GEMM_SHARED(sh), the block's GemmShared in dynamic shared memory (88 or 96
// KB, over the static limit; kernel_specs.h's kGemmSharedBytes); and the
// kernel's launch bounds, 2 blocks per SM for all: the exact tile keeps 16
// lane sums and their trees in registers, where ptxas would otherwise stop at
// 168 and spill, and the shared memory allows no more than 2 blocks anyway
// (for the f16 tile ptxas otherwise aims at more, and spilled at 80
// registers). Included by each gemm*.cu after gemm.cuh, without an include
// guard: the SIMT emulator includes several variants, each in its own
// namespace.
#undef GEMM_LAUNCH_BOUNDS
#undef GEMM_SHARED
#define GEMM_LAUNCH_BOUNDS RAYO_LAUNCH_BOUNDS_MIN(GEMM_THREADS, 2)
#define GEMM_SHARED(sh) RAYO_DYNAMIC_SHARED(GemmShared, sh)
#if GEMM_EXACT == 1
using namespace gemm_exact;
#elif GEMM_EXACT == 2
using namespace gemm_int8;
#else
using namespace gemm_f16;
#endif
// Tokens a block takes (the grid's token tile: kernel_specs.h's
// gemm_block_tokens): the tile's kBlockTokens, or with GEMM_BLOCK_TOKENS 32
// one half of the f16 and int8 tiles (RAYO_GEMM_BLOCK_TOKENS=32: twice the
// blocks for a step of few tokens on a narrow matrix, each weight decoded for
// 32 tokens).
#undef GEMM_TILE_TOKENS
#ifdef GEMM_BLOCK_TOKENS
#define GEMM_TILE_TOKENS GEMM_BLOCK_TOKENS
#else
#define GEMM_TILE_TOKENS kBlockTokens
#endif
static_assert(GEMM_TILE_TOKENS == kBlockTokens || GEMM_TILE_TOKENS == GEMM_TOKENS, "a block takes one or two halves");
