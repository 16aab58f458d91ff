// Token sampling on the device: runtime::sample_with_uniform
// (src/runtime/sampler.cpp) for each row of logits, so that a decode step
// downloads one int per sequence instead of N_VOCAB floats. The same float and
// double operations in the same order as the CPU function, so that the two
// draw the same token for the same logits, parameters, penalties and u; only
// expf may differ from the host's in the last place (the emulator, which uses
// the host's expf, agrees exactly).
//
// sample: block r samples row r < *n_rows (rows past it are not touched) and
// writes its token to ids[r] (-1 for a row whose record says the host samples it):
//   1. penalties: the row is copied to scratch row r and the row's (token,
//      count) pairs applied there, one thread per pair (tokens are distinct).
//   2. temperature <= 0, or top_k == 1: the largest logit, lowest id on ties
//      (a block-wide maximum of the 64-bit key below).
//   3. top-k (1 < top_k < N_VOCAB): exact selection of the k largest by (logit
//      descending, id ascending). Each value gets a 64-bit key that orders
//      like that (monotonic float bits, -0 as +0, above the id reversed), so
//      the k-th largest key is unique; it is found by radix select, one byte
//      per pass from the top (4 passes for the float, 1-3 for the id, stopping
//      as soon as the bin holding it is taken whole): each pass counts the
//      values still in play into a 256-bin shared histogram (warp-aggregated:
//      lanes with the same digit add once), and warp 0 finds the bin. The
//      selected values are then compacted into shared memory and bitonic-sorted
//      by (logit desc, id asc). top_k >= N_VOCAB (only if N_VOCAB <= K_MAX)
//      keeps every token in id order, unsorted, as the CPU does.
//   4. top-p, min-p, temperature and the inverse-CDF draw over the <= K_MAX
//      candidates: elementwise steps by the block, running sums (doubles, in
//      candidate order) by thread 0, exactly the CPU's loops.
//   5. top_k 0 with top_p 1 and min_p 0 (OpenAI's defaults), any N_VOCAB:
//      every token in id order, as the CPU draws them without sorting: the
//      weights exp(logit / T - max) are summed per thread over a contiguous
//      run of ids (doubles), the runs' sums scanned across the block in id
//      order, and the thread whose run holds the crossing of u * total walks
//      it. The CPU keeps one running sum over the whole row, so the two can
//      differ only where u * total falls within a double's rounding of a
//      running sum (about 1e-16 of the total).
// NaN logits are outside the contract (the CPU's order is then undefined too).
//
// Grid: (max_rows); block SAMPLE_THREADS (1024: a row's selection passes
// stream the whole row through one SM, so they want all of its threads).
// Speed: not measured yet (written on a machine without a GPU). The cost is
// in the radix passes over the row (from L2 after the first): about 50
// instructions per logit in the first two passes (8 ballots find the lanes
// sharing a digit), about 10 in later ones where few lanes are still in play;
// greedy rows make one pass of about 10.
// Static shared memory: 3 * 4 * K_MAX + 1 KB histogram + a few words
// (about 13.3 KB for K_MAX = 1024).
// Shape macros: N_VOCAB (<= 2^24), K_MAX (the largest top_k; a power of two),
// SAMPLE_THREADS (a multiple of 32, at most 1024).
// Layouts: logits, scratch [rows][N_VOCAB] f32; params [rows][12] ints, the
// record of backends/cuda/device_sampling.h (floats bit-cast); pairs [n][2]
// ints (token, count); ids [rows] ints; n_rows one int.
#include "common.cuh"

// Fields of the parameter record (device_sampling.h documents them; its
// kSampleRecord* constants hold the same numbers).
constexpr int SR_INTS = 12;
constexpr int SR_MODE = 0;  // 0: the host samples the row, 1: this kernel does
constexpr int SR_TEMPERATURE = 1, SR_TOP_K = 2, SR_TOP_P = 3, SR_MIN_P = 4, SR_LOG_MIN_P = 5;
constexpr int SR_REPEAT = 6, SR_PRESENCE = 7, SR_FREQUENCY = 8, SR_U = 9;
constexpr int SR_PEN_OFFSET = 10, SR_PEN_COUNT = 11;

constexpr int SAMPLE_WARPS = SAMPLE_THREADS / WARP;
// Bytes of the reversed id in the key, and the radix passes (one per byte).
constexpr int ID_BYTES = (N_VOCAB - 1) < 256 ? 1 : (N_VOCAB - 1) < 65536 ? 2 : 3;
constexpr int SELECT_PASSES = 4 + ID_BYTES;
static_assert(N_VOCAB >= 1 && N_VOCAB <= (1 << 24), "ids must fit the key's 24 low bits");
static_assert(K_MAX >= 1 && (K_MAX & (K_MAX - 1)) == 0, "K_MAX must be a power of two");
static_assert(SAMPLE_THREADS % WARP == 0 && SAMPLE_THREADS <= 1024, "whole warps, one block");

typedef unsigned long long sample_key_t;

// One block per SM is the design (a block per row). Without the second bound
// ptxas aims at two resident blocks of 1024 threads, caps the kernel at 32
// registers and spills; with it, 40 registers and no spills.
#ifdef RAYO_SIMT
#define SAMPLE_BOUNDS
#else
#define SAMPLE_BOUNDS __launch_bounds__(SAMPLE_THREADS, 1)
#endif

// Products rounded on their own: NVRTC contracts a * b + c into one fma by
// default (--fmad=true), which rounds once where the CPU rounds twice (its
// float_product in runtime/sampler.cpp keeps the host compiler from fusing too).
#ifdef RAYO_SIMT
__device__ __forceinline__ float mul_rn(float a, float b) { return a * b; }
__device__ __forceinline__ int popcount(u32 x) { return __builtin_popcount(x); }
#else
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ int popcount(u32 x) { return __popc(x); }
#endif

__device__ __forceinline__ float record_float(const int* rec, int field) {
  return __uint_as_float(static_cast<u32>(rec[field]));
}

// Larger key = earlier in the order (logit descending, id ascending): the
// float's bits made monotonic (negative values flipped; -0 counted as +0, since
// the CPU's float comparison finds them equal), above N_VOCAB - 1 - id.
__device__ __forceinline__ sample_key_t order_key(float x, int id) {
  u32 b = __float_as_uint(x == 0.0f ? 0.0f : x);
  b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return (static_cast<sample_key_t>(b) << 32) | static_cast<u32>(N_VOCAB - 1 - id);
}
__device__ __forceinline__ int key_id(sample_key_t key) { return N_VOCAB - 1 - static_cast<int>(key & 0xffffffu); }

// The CPU's candidate order: a before b.
__device__ __forceinline__ bool before(float la, int ia, float lb, int ib) {
  return la > lb || (la == lb && ia < ib);
}

// The byte of the key pass `pass` looks at: the float's 4 bytes from the top,
// then the id's low ID_BYTES bytes (its higher ones are 0 in every key).
__device__ __forceinline__ int pass_shift(int pass) { return pass < 4 ? 56 - 8 * pass : 8 * (SELECT_PASSES - 1 - pass); }

// Adds this lane's digit to the shared histogram if `in`: lanes with the same
// digit (found with 8 ballots, one per bit) add once, through their lowest
// lane, so a row whose values share a few bins costs few atomics. Every lane
// of the warp must call it.
__device__ __forceinline__ void histogram_add(u32* hist, bool in, u32 digit) {
  const u32 active = __ballot_sync(FULL_MASK, in);
  if (active == 0) return;  // the same for every lane
  u32 peers = active;
RAYO_UNROLL
  for (int b = 0; b < 8; ++b) {
    const bool bit = (digit >> b) & 1u;
    const u32 set = __ballot_sync(FULL_MASK, bit);
    peers &= bit ? set : ~set;
  }
  const u32 below = (1u << (threadIdx.x % WARP)) - 1u;
  if (in && (peers & below) == 0) atomicAdd(&hist[digit], static_cast<u32>(popcount(peers)));
}

// Radix select state, in shared memory.
struct SelectState {
  sample_key_t prefix;  // the resolved high bytes of the k-th largest key
  sample_key_t mask;    // which bytes are resolved
  u32 k_rem;            // how many of the keys matching prefix under mask are taken
  int done;             // all of them are: the selection is complete
};

// On return, exactly k keys of the row have (key & state->mask) >= state->prefix:
// the k largest. Needs 0 < k < N_VOCAB. Every thread of the block must call it.
__device__ void radix_select(const float* row, int k, u32* hist, SelectState* state) {
  const int tid = threadIdx.x;
  if (tid == 0) *state = SelectState{0ull, 0ull, static_cast<u32>(k), 0};
  for (int pass = 0; pass < SELECT_PASSES; ++pass) {
    const int shift = pass_shift(pass);
    for (int i = tid; i < 256; i += SAMPLE_THREADS) hist[i] = 0;
    __syncthreads();  // also publishes the state of the previous pass
    // Read before the bin search below rewrites the state.
    const sample_key_t mask = state->mask, prefix = state->prefix;
    const u32 k_rem = state->k_rem;
    for (int base = 0; base < N_VOCAB; base += SAMPLE_THREADS) {  // the same trips for every thread
      const int i = base + tid;
      sample_key_t key = 0;
      bool in = false;
      if (i < N_VOCAB) {
        key = order_key(row[i], i);
        in = (key & mask) == prefix;
      }
      histogram_add(hist, in, static_cast<u32>(key >> shift) & 0xffu);
    }
    __syncthreads();
    if (tid < WARP) {
      // Lane l owns bins 255 - 8l down to 248 - 8l; `above` counts the keys in
      // higher bins. The lane whose range holds the k_rem-th key resolves it.
      const int lane = tid;
      u32 c[8], total = 0;
RAYO_UNROLL
      for (int j = 0; j < 8; ++j) {
        c[j] = hist[255 - 8 * lane - j];
        total += c[j];
      }
      u32 incl = total;
RAYO_UNROLL
      for (int o = 1; o < WARP; o <<= 1) {
        const u32 v = __shfl_up_sync(FULL_MASK, incl, o);
        if (lane >= o) incl += v;
      }
      u32 acc = incl - total;
      if (acc < k_rem && k_rem <= incl) {
        bool found = false;
RAYO_UNROLL
        for (int j = 0; j < 8; ++j) {
          if (!found && acc + c[j] >= k_rem) {
            found = true;
            state->prefix = prefix | static_cast<sample_key_t>(255 - 8 * lane - j) << shift;
            state->mask = ~0ull << shift;
            state->k_rem = k_rem - acc;
            state->done = c[j] == k_rem - acc;
          }
          if (!found) acc += c[j];
        }
      }
    }
    __syncthreads();
    if (state->done) break;  // the last pass always ends here: keys are unique
  }
}

// Sorts lg/id[0, n) by the CPU's order (n <= K_MAX), padding to a power of two
// with entries that sort last. Every thread of the block must call it.
__device__ void sort_candidates(float* lg, int* id, int n) {
  int p = 1;
  while (p < n) p <<= 1;
  for (int i = n + static_cast<int>(threadIdx.x); i < p; i += SAMPLE_THREADS) {
    lg[i] = -INFINITY;
    id[i] = 0x7fffffff;
  }
  __syncthreads();
  for (int size = 2; size <= p; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int t = threadIdx.x; t < p / 2; t += SAMPLE_THREADS) {
        const int a = 2 * t - (t & (stride - 1)), b = a + stride;
        const bool ascending = (a & size) == 0;  // this run goes in the CPU's order
        const float la = lg[a], lb = lg[b];
        const int ia = id[a], ib = id[b];
        if (ascending ? before(lb, ib, la, ia) : before(la, ia, lb, ib)) {
          lg[a] = lb, lg[b] = la;
          id[a] = ib, id[b] = ia;
        }
      }
      __syncthreads();
    }
}

// The largest of lg[0, n): the first if sorted, else the CPU's loop (thread 0).
// Every thread of the block must call it.
__device__ __forceinline__ float candidates_max(const float* lg, int n, bool sorted, float* shared_max) {
  if (sorted) return lg[0];
  if (threadIdx.x == 0) {
    float m = -INFINITY;
    for (int i = 0; i < n; ++i) m = m < lg[i] ? lg[i] : m;  // std::max(m, lg[i])
    *shared_max = m;
  }
  __syncthreads();
  const float m = *shared_max;
  __syncthreads();  // before a later call writes it again
  return m;
}

// runtime::pick_by_uniform (thread 0 only).
__device__ int pick_by_uniform(const float* w, int n, float u) {
  double total = 0;
  for (int i = 0; i < n; ++i) total += w[i];
  const double target = static_cast<double>(u) * total;
  double cum = 0;
  for (int i = 0; i < n; ++i) {
    cum += w[i];
    if (cum > target) return i;
  }
  for (int i = n - 1; i >= 0; --i)
    if (w[i] > 0.0f) return i;
  return 0;
}

// Step 5: the draw over every token of the row in id order (the CPU's loop
// without a sort), returned to every thread. Every thread of the block must call it.
__device__ int sample_every_token(const float* row, float temperature, float u) {
  constexpr int kRun = (N_VOCAB + SAMPLE_THREADS - 1) / SAMPLE_THREADS;  // ids per thread
  __shared__ float s_part_max[SAMPLE_WARPS];
  __shared__ double s_part_sum[SAMPLE_WARPS];
  __shared__ int s_pick;
  const int tid = threadIdx.x, lane = tid % WARP, warp = tid / WARP;
  const int begin = tid * kRun < N_VOCAB ? tid * kRun : N_VOCAB;
  const int end = begin + kRun < N_VOCAB ? begin + kRun : N_VOCAB;
  // The largest logit / temperature (the CPU divides each logit first).
  float m = -INFINITY;
  for (int i = begin; i < end; ++i) m = fmaxf(m, row[i] / temperature);
  m = warp_max(m);
  if (lane == 0) s_part_max[warp] = m;
  if (tid == 0) s_pick = -1;
  __syncthreads();
  float top = s_part_max[0];
  for (int w = 1; w < SAMPLE_WARPS; ++w) top = fmaxf(top, s_part_max[w]);
  // This run's sum of the weights, then the sums of the runs before it
  // (an exclusive scan in id order: lanes by shuffles, warps through shared memory).
  double run = 0;
  for (int i = begin; i < end; ++i) run += expf(row[i] / temperature - top);
  double incl = run;
RAYO_UNROLL
  for (int o = 1; o < WARP; o <<= 1) {
    const double v = __shfl_up_sync(FULL_MASK, incl, o);
    if (lane >= o) incl += v;
  }
  if (lane == WARP - 1) s_part_sum[warp] = incl;
  __syncthreads();
  double before = __shfl_up_sync(FULL_MASK, incl, 1), total = 0;  // the lanes' runs before this one
  if (lane == 0) before = 0;
  for (int w = 0; w < SAMPLE_WARPS; ++w) {
    if (w < warp) before += s_part_sum[w];
    total += s_part_sum[w];
  }
  const double target = static_cast<double>(u) * total;
  // Sums are nondecreasing in id order: the first run whose end passes the
  // target holds the token (the walk repeats the run's sum, so it crosses).
  // The lowest such thread is found as the largest SAMPLE_THREADS - 1 - tid.
  if (before + run > target) atomicMax(&s_pick, SAMPLE_THREADS - 1 - tid);
  __syncthreads();
  const int owner = s_pick < 0 ? -1 : SAMPLE_THREADS - 1 - s_pick;
  __syncthreads();
  if (tid == 0) s_pick = -1;
  __syncthreads();
  if (owner < 0) {
    // No crossing (a NaN weight): the CPU's fallback, the last positive weight.
    int last = -1;
    for (int i = begin; i < end; ++i)
      if (expf(row[i] / temperature - top) > 0.0f) last = i;
    for (int o = 16; o > 0; o >>= 1) {
      const int other = __shfl_xor_sync(FULL_MASK, last, o);
      last = other > last ? other : last;
    }
    if (lane == 0) atomicMax(&s_pick, last);
    __syncthreads();
    return s_pick < 0 ? 0 : s_pick;
  }
  if (tid == owner) {
    double cum = 0;
    int pick = end - 1;
    for (int i = begin; i < end; ++i) {
      cum += expf(row[i] / temperature - top);
      if (before + cum > target) {
        pick = i;
        break;
      }
    }
    s_pick = pick;
  }
  __syncthreads();
  return s_pick;
}

RAYO_KERNEL SAMPLE_BOUNDS
sample(const SampleArgs args) {
  grid_dependency_wait();
  const int r = blockIdx.x;
  if (r >= *args.n_rows) return;
  const int tid = threadIdx.x;
  const int* rec = args.records + static_cast<long long>(r) * SR_INTS;
  const int top_k = rec[SR_TOP_K];
  const float temperature = record_float(rec, SR_TEMPERATURE);
  const bool greedy = temperature <= 0.0f || top_k == 1;  // top-1 draws its only candidate
  const bool every_token =
      !greedy && top_k == 0 && record_float(rec, SR_TOP_P) >= 1.0f && record_float(rec, SR_MIN_P) <= 0.0f;
  // Rows the host samples, and (defensively) records this kernel cannot serve.
  if (rec[SR_MODE] != 1 || (!greedy && !every_token && (top_k < 1 || top_k > K_MAX))) {
    if (tid == 0) args.ids[r] = -1;
    return;
  }

  const float* row = args.logits + static_cast<long long>(r) * N_VOCAB;
  const int pen_count = rec[SR_PEN_COUNT];
  if (pen_count > 0) {
    float* copy = args.scratch + static_cast<long long>(r) * N_VOCAB;
    for (int i = tid; i < N_VOCAB; i += SAMPLE_THREADS) copy[i] = row[i];
    __syncthreads();
    const float repeat = record_float(rec, SR_REPEAT), presence = record_float(rec, SR_PRESENCE),
                frequency = record_float(rec, SR_FREQUENCY);
    const int* pr = args.pairs + 2ll * rec[SR_PEN_OFFSET];
    for (int j = tid; j < pen_count; j += SAMPLE_THREADS) {
      const int token = pr[2 * j], count = pr[2 * j + 1];
      if (token < 0 || token >= N_VOCAB) continue;
      float l = copy[token];
      l = l > 0.0f ? l / repeat : mul_rn(l, repeat);
      copy[token] = l - (mul_rn(static_cast<float>(count), frequency) + presence);
    }
    __syncthreads();
    row = copy;
  }

  __shared__ sample_key_t s_warp_best[SAMPLE_WARPS];
  if (greedy) {
    sample_key_t best = 0;
    for (int i = tid; i < N_VOCAB; i += SAMPLE_THREADS) {
      const sample_key_t key = order_key(row[i], i);
      best = key > best ? key : best;
    }
RAYO_UNROLL
    for (int o = 16; o > 0; o >>= 1) {
      const sample_key_t other = __shfl_xor_sync(FULL_MASK, best, o);
      best = other > best ? other : best;
    }
    if (tid % WARP == 0) s_warp_best[tid / WARP] = best;
    __syncthreads();
    if (tid == 0) {
      for (int w = 1; w < SAMPLE_WARPS; ++w) best = s_warp_best[w] > best ? s_warp_best[w] : best;
      args.ids[r] = key_id(best);
    }
    return;
  }

  if (every_token) {
    const int id = sample_every_token(row, temperature, record_float(rec, SR_U));
    if (tid == 0) args.ids[r] = id;
    return;
  }

  __shared__ float s_logit[K_MAX];
  __shared__ int s_id[K_MAX];
  __shared__ float s_w[K_MAX];
  __shared__ u32 s_hist[256];
  __shared__ SelectState s_select;
  // One shared word per step's result, so that no thread still reading one
  // races thread 0 writing the next.
  __shared__ int s_taken, s_top_p_keep, s_min_p_keep;
  __shared__ double s_sum;
  __shared__ float s_max;

  // Candidates: the top-k sorted, or (top_k >= N_VOCAB) every token in id order.
  int n;
  bool sorted;
  if (top_k < N_VOCAB) {
    radix_select(row, top_k, s_hist, &s_select);
    const sample_key_t mask = s_select.mask, prefix = s_select.prefix;
    if (tid == 0) s_taken = 0;
    __syncthreads();
    const u32 below = (1u << (tid % WARP)) - 1u;
    for (int base = 0; base < N_VOCAB; base += SAMPLE_THREADS) {
      const int i = base + tid;
      float x = 0.0f;
      bool take = false;
      if (i < N_VOCAB) {
        x = row[i];
        take = (order_key(x, i) & mask) >= prefix;
      }
      const u32 takers = __ballot_sync(FULL_MASK, take);
      if (takers == 0) continue;  // the same for every lane
      int first = 0;
      if (tid % WARP == 0) first = atomicAdd(&s_taken, popcount(takers));
      first = __shfl_sync(FULL_MASK, first, 0);
      const int slot = first + popcount(takers & below);  // < top_k: exactly top_k are taken
      if (take && slot < top_k) {
        s_logit[slot] = x;
        s_id[slot] = i;
      }
    }
    __syncthreads();
    n = top_k;
    sort_candidates(s_logit, s_id, n);
    sorted = true;
  } else {
    if constexpr (N_VOCAB <= K_MAX) {
      for (int i = tid; i < N_VOCAB; i += SAMPLE_THREADS) {
        s_logit[i] = row[i];
        s_id[i] = i;
      }
      __syncthreads();
    }
    n = N_VOCAB;  // unreachable unless N_VOCAB <= K_MAX (top_k <= K_MAX here)
    sorted = false;
  }

  // top-p over the probabilities before temperature: the smallest prefix of
  // the sorted order whose mass reaches top_p (the sum in candidate order).
  const float top_p = record_float(rec, SR_TOP_P);
  if (top_p < 1.0f) {
    const float top = candidates_max(s_logit, n, sorted, &s_max);
    for (int i = tid; i < n; i += SAMPLE_THREADS) s_w[i] = expf(s_logit[i] - top);
    __syncthreads();
    if (tid == 0) {
      double sum = 0;
      for (int i = 0; i < n; ++i) sum += s_w[i];
      s_sum = sum;
    }
    __syncthreads();
    const double sum = s_sum;
    if (!sorted) {
      sort_candidates(s_logit, s_id, n);
      sorted = true;
      for (int i = tid; i < n; i += SAMPLE_THREADS) s_w[i] = expf(s_logit[i] - top);
    }
    for (int i = tid; i < n; i += SAMPLE_THREADS) s_w[i] = static_cast<float>(s_w[i] / sum);
    __syncthreads();
    if (tid == 0) {
      double cum = 0;
      int keep = n;
      for (int i = 0; i < n; ++i) {
        cum += s_w[i];
        if (cum >= top_p) {
          keep = i + 1;
          break;
        }
      }
      s_top_p_keep = keep;
    }
    __syncthreads();
    n = s_top_p_keep;
  }

  // min-p: drop logits below max + log(min_p), keeping the order (log(min_p)
  // comes from the host, computed as the CPU does).
  const float min_p = record_float(rec, SR_MIN_P);
  if (min_p > 0.0f) {
    const float threshold = candidates_max(s_logit, n, sorted, &s_max) + record_float(rec, SR_LOG_MIN_P);
    if (tid == 0) {
      int kept = 0;
      if (sorted) {  // the dropped ones are a suffix: find where it starts
        int hi = n;
        while (kept < hi) {
          const int mid = (kept + hi) / 2;
          if (s_logit[mid] < threshold)
            hi = mid;
          else
            kept = mid + 1;
        }
      } else {
        for (int i = 0; i < n; ++i)
          if (!(s_logit[i] < threshold)) {
            s_logit[kept] = s_logit[i];
            s_id[kept] = s_id[i];
            ++kept;
          }
      }
      s_min_p_keep = kept;
    }
    __syncthreads();
    n = s_min_p_keep;
  }

  // Temperature, the softmax's numerators as weights, and the draw.
  for (int i = tid; i < n; i += SAMPLE_THREADS) s_logit[i] = s_logit[i] / temperature;
  __syncthreads();
  const float top = candidates_max(s_logit, n, sorted, &s_max);
  for (int i = tid; i < n; i += SAMPLE_THREADS) s_w[i] = expf(s_logit[i] - top);
  __syncthreads();
  if (tid == 0) args.ids[r] = s_id[pick_by_uniform(s_w, n, record_float(rec, SR_U))];
}
