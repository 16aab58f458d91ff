// The GEMM a kernel file multiplies with (gemm.cuh): the exact int8 tile
// when its GEMM_EXACT macro is 1, the f16 one otherwise; GEMM_SHARED(sh), the
// block's GemmShared: static for the exact tile (about 40 KB), dynamic for the
// f16 one (96 KB, over the static limit); and the kernel's launch bounds, 2
// blocks per SM for both: the exact tile keeps 16 lane sums and their trees in
// registers, where ptxas would otherwise stop at 168 and spill, and the f16
// tile's shared memory allows no more than 2 blocks anyway (ptxas otherwise
// aims at more, and spilled at 80 registers). Included by each gemm*.cu after gemm.cuh,
// without an include guard: the SIMT emulator includes several variants, each
// in its own namespace.
#undef GEMM_LAUNCH_BOUNDS
#undef GEMM_SHARED
#define GEMM_LAUNCH_BOUNDS RAYO_LAUNCH_BOUNDS_MIN(GEMM_THREADS, 2)
#if GEMM_EXACT
using namespace gemm_exact;
#define GEMM_SHARED(sh) __shared__ GemmShared sh
#else
using namespace gemm_f16;
#define GEMM_SHARED(sh) RAYO_DYNAMIC_SHARED(GemmShared, sh)
#endif
