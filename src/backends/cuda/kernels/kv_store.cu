// Writes k[t] and v[t] (KV_WIDTH floats each) as halves into the cache row of
// position positions[t] of sequence seq[t] (paged: kv_row in common.cuh).
// Shape macros: KV_WIDTH, BLOCK_SIZE (positions per cache block).
// Grid: (max_rows); block 128.
#include "common.cuh"
#ifndef RING_BLOCKS
#define RING_BLOCKS 0  // a sliding-window layer's ring of cache blocks per sequence (kv_row, common.cuh)
#endif

RAYO_KERNEL RAYO_LAUNCH_BOUNDS(128)
kv_store(const KvStoreArgs args) {
  grid_dependency_wait();
  const int t = blockIdx.x;
  if (t >= *args.n_rows) return;
  const long long base = kv_row(args.kv, t, args.kv.positions[t], BLOCK_SIZE, RING_BLOCKS) * KV_WIDTH;
  for (int i = threadIdx.x; i < KV_WIDTH; i += blockDim.x) {
    args.k_cache[base + i] = f2h(args.k[t * KV_WIDTH + i]);
    args.v_cache[base + i] = f2h(args.v[t * KV_WIDTH + i]);
  }
}
