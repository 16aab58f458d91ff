// The GEMM a kernel file multiplies with (gemm.cuh): the exact int8 tile
// when its GEMM_EXACT macro is 1, the f16 one otherwise. Included by each
// gemm*.cu after gemm.cuh, without an include guard: the SIMT emulator
// includes several variants, each in its own namespace.
#if GEMM_EXACT
using namespace gemm_exact;
#else
using namespace gemm_f16;
#endif
