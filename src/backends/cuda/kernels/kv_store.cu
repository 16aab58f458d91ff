// Writes k[t] and v[t] (KV_WIDTH floats each) as halves into the cache row of
// position positions[t] of sequence seq[t] (paged: kv_row in common.cuh).
// Shape macros: KV_WIDTH, BLOCK_SIZE (positions per cache block).
// Grid: (max_rows); block 128.
#include "common.cuh"

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(128)
kv_store(const float* k, const float* v, u16* k_cache, u16* v_cache, const int* positions, const int* seq,
         const int* block_table, const int* max_blocks, const int* n_rows) {
  const int t = blockIdx.x;
  if (t >= *n_rows) return;
  const long long base = kv_row(block_table, seq[t], *max_blocks, positions[t], BLOCK_SIZE) * KV_WIDTH;
  for (int i = threadIdx.x; i < KV_WIDTH; i += blockDim.x) {
    k_cache[base + i] = f2h(k[t * KV_WIDTH + i]);
    v_cache[base + i] = f2h(v[t * KV_WIDTH + i]);
  }
}
