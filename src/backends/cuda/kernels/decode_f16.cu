// A quantized matrix in its GPU layout (weight_formats.cuh) as f16 rows
// [ROWS][COLS], for the dense GEMM of a prompt step (gemm_dense.cu): each
// weight is decoded once per step, where the f16 tile (gemm.cuh) decodes it
// again for every block of tokens, to the same f16 values (unit_halves.cuh).
// With GLU_HALF (0: gate, 1: up; ROWS a multiple of 8) row r goes to row
// 16 (r / 8) + r % 8 + 8 GLU_HALF of a matrix of 2 ROWS rows: gate/up's
// interleave, which gemm_dense.cu's GLU epilogue reads.
// Shape macros: WTYPE, ROWS, COLS, GLU_HALF. Grid: (kernel_specs' blocks)
// striding over the matrix's units, a thread a unit; block 256.
#include "unit_halves.cuh"

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(256) decode_f16(const DequantArgs args) {
  grid_dependency_wait();
  using F = Gpu<WTYPE>;
  constexpr int kUnitsPerRow = COLS / F::kUnit;
  constexpr int kUnitsPerChunk = 256 / F::kUnit;  // Gpu<FMT>::offset places a unit's values in a chunk of 256
  const long long units = static_cast<long long>(ROWS) * kUnitsPerRow;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < units; i += stride) {
    const long long row = i / kUnitsPerRow;
    const int u = static_cast<int>(i % kUnitsPerRow), uc = u % kUnitsPerChunk;
    uint4 pieces[F::kUnit / 8];
    unit_halves<WTYPE>(load_unit<WTYPE, ROWS, COLS>(args.w, row, u), pieces);
#ifdef GLU_HALF
    const long long out_row = (row / 8) * 16 + row % 8 + 8 * GLU_HALF;
#else
    const long long out_row = row;
#endif
    u16* chunk = args.out + out_row * COLS + 256LL * (u / kUnitsPerChunk);
RAYO_UNROLL
    for (int p = 0; p < F::kUnit / 8; ++p) *reinterpret_cast<uint4*>(chunk + F::offset(uc, 8 * p)) = pieces[p];
  }
}
