// The GEMM a kernel file multiplies with (gemm.cuh): the exact int8 tile
// when its GEMM_EXACT macro is 1, the f16 one otherwise, and the kernel's
// launch bounds: the exact tile keeps 16 lane sums and their trees in
// registers, so ptxas may use up to 255 (2 blocks per SM), where it would
// otherwise stop at 168 and spill. Included by each gemm*.cu after gemm.cuh,
// without an include guard: the SIMT emulator includes several variants, each
// in its own namespace.
#undef GEMM_LAUNCH_BOUNDS
#if GEMM_EXACT
using namespace gemm_exact;
#define GEMM_LAUNCH_BOUNDS RAYO_LAUNCH_BOUNDS_MIN(GEMM_THREADS, 2)
#else
using namespace gemm_f16;
#define GEMM_LAUNCH_BOUNDS RAYO_LAUNCH_BOUNDS(GEMM_THREADS)
#endif
