// The SIMT emulator's scheduler (simt/simt.h): fibers switched by a few
// instructions on x86-64 (swapcontext, elsewhere, makes a system call per
// switch to save the signal mask, and a kernel test switches millions of times).
#include <ucontext.h>

#include <algorithm>
#include <cstdint>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "simt/simt.h"

// AddressSanitizer must be told about every stack switch, or it misreads the
// fibers' stacks (false reports, or missed ones). The annotations compile to
// nothing in a build without ASan.
#if defined(__SANITIZE_ADDRESS__)
#define SIMT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIMT_ASAN 1
#endif
#endif
#ifdef SIMT_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// Context switch: saves the callee-saved registers and the floating-point
// control words of the running fiber on its stack, stores its stack pointer in
// *save_sp and resumes the fiber whose stack pointer is new_sp (System V AMD64).
#if defined(__x86_64__)
#define SIMT_FAST_SWITCH 1
extern "C" void simt_switch(void** save_sp, void* new_sp);
asm(R"(
  .text
  .globl simt_switch
  .type simt_switch, @function
simt_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  stmxcsr 8(%rsp)
  fnstcw (%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  fldcw (%rsp)
  ldmxcsr 8(%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size simt_switch, .-simt_switch
  .section .note.GNU-stack, "", @progbits
  .text
)");
#endif

namespace simt {
namespace {

// Announces a switch to the stack [bottom, bottom + size); `save` keeps the
// leaving context's fake stack (nullptr when the leaving fiber is finished).
inline void asan_start_switch(void** save, const void* bottom, size_t size) {
#ifdef SIMT_ASAN
  __sanitizer_start_switch_fiber(save, bottom, size);
#else
  (void)save, (void)bottom, (void)size;
#endif
}
// Completes a switch on the arriving side; reports where we came from.
inline void asan_finish_switch(void* save, const void** from_bottom, size_t* from_size) {
#ifdef SIMT_ASAN
  __sanitizer_finish_switch_fiber(save, from_bottom, from_size);
#else
  (void)save, (void)from_bottom, (void)from_size;
#endif
}

constexpr size_t kStackBytes = 256 * 1024;
constexpr int kWarp = 32;
constexpr int kGatherWords = 16;

// A cp.async copy, performed when its thread waits for its group.
struct AsyncCopy {
  void* dst;
  const void* src;
  int bytes;
};

struct Fiber {
  ucontext_t ctx;       // without SIMT_FAST_SWITCH
  void* sp = nullptr;   // with SIMT_FAST_SWITCH: the saved stack pointer
  void* stack = nullptr;  // for the sanitizer annotations
  size_t stack_size = 0;
  dim3 tid;
  bool done = false;
  bool waiting = false;  // parked in a barrier
  std::vector<AsyncCopy> open_group;                // cp.async copies since the last commit
  std::vector<std::vector<AsyncCopy>> committed;    // committed groups, oldest first
};

struct Barrier {
  int count = 0;
  uint64_t generation = 0;
};

struct WarpState {
  Barrier barrier;
  int live = 0;
  uint64_t slots[kWarp] = {};
  uint32_t wide[kWarp][kGatherWords] = {};  // warp_allgather's exchange
};

struct BlockState {
  dim3 block_idx, block_dim, grid_dim;
  std::vector<Fiber> fibers;
  std::vector<WarpState> warps;
  Barrier barrier;
  int live = 0;
  int current = -1;
  uint64_t progress = 0;  // barrier releases and exits
  ucontext_t scheduler;
  void* scheduler_sp = nullptr;
  const void* scheduler_stack = nullptr;  // the launching thread's stack (learned on the first switch)
  size_t scheduler_stack_size = 0;
  const std::function<void()>* body = nullptr;
  std::vector<unsigned char> dynamic_shared;  // the block's dynamic shared memory
};

BlockState* g_block = nullptr;
LaunchStats g_stats;

Fiber& me() { return g_block->fibers[g_block->current]; }

// Switches from fiber f to the scheduler, and back when it resumes f.
void to_scheduler(Fiber& f) {
#ifdef SIMT_FAST_SWITCH
  simt_switch(&f.sp, g_block->scheduler_sp);
#else
  swapcontext(&f.ctx, &g_block->scheduler);
#endif
}

void yield() {
  ++g_stats.switches;
  void* fake_stack = nullptr;
  asan_start_switch(&fake_stack, g_block->scheduler_stack, g_block->scheduler_stack_size);
  to_scheduler(me());
  asan_finish_switch(fake_stack, nullptr, nullptr);
}

// Waits until `live` participants have arrived (the last one releases).
void wait_barrier(Barrier& b, int live) {
  const uint64_t gen = b.generation;
  if (++b.count >= live) {
    b.count = 0;
    ++b.generation;
    ++g_block->progress;
    return;
  }
  me().waiting = true;
  while (b.generation == gen) yield();
  me().waiting = false;
}

// A fiber exited: barriers it will never reach may now be complete.
void release_if_complete(Barrier& b, int live) {
  if (b.count > 0 && b.count >= live) {
    b.count = 0;
    ++b.generation;
  }
}

void fiber_main() {
  BlockState& b = *g_block;
  asan_finish_switch(nullptr, &b.scheduler_stack, &b.scheduler_stack_size);
  (*b.body)();
  Fiber& f = me();
  if (!f.open_group.empty() || !f.committed.empty()) {
    std::fprintf(stderr, "simt: thread %u of block (%u,%u,%u) exited with cp.async copies it never waited for\n",
                 f.tid.x, b.block_idx.x, b.block_idx.y, b.block_idx.z);
    std::abort();
  }
  f.done = true;
  --b.live;
  const int linear = static_cast<int>(f.tid.x + b.block_dim.x * (f.tid.y + b.block_dim.y * f.tid.z));
  WarpState& w = b.warps[linear / kWarp];
  --w.live;
  ++b.progress;
  release_if_complete(w.barrier, w.live);
  release_if_complete(b.barrier, b.live);
  // This fiber's stack is done: back to the scheduler for good.
  asan_start_switch(nullptr, b.scheduler_stack, b.scheduler_stack_size);
#ifdef SIMT_FAST_SWITCH
  void* unused = nullptr;
  simt_switch(&unused, b.scheduler_sp);
  std::abort();  // never resumed
#endif
  // (ucontext: returning resumes uc_link, the scheduler.)
}

#ifdef SIMT_FAST_SWITCH
// A fresh fiber's stack, as simt_switch leaves a suspended one: the default
// control words, zeroed registers and fiber_main as the return address (placed
// so that fiber_main starts with the stack alignment of a called function).
void* initial_stack(char* stack, size_t size) {
#ifdef SIMT_ASAN
  // A finished fiber leaves its frames' redzones poisoned in the reused stack.
  ASAN_UNPOISON_MEMORY_REGION(stack, size);
#endif
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + size) & ~uintptr_t{15};
  auto* slot = reinterpret_cast<uint64_t*>(top - 16);  // the return address, 16-aligned
  slot[0] = reinterpret_cast<uint64_t>(&fiber_main);
  for (int i = 1; i <= 6; ++i) slot[-i] = 0;  // rbp, rbx, r12..r15
  auto* words = reinterpret_cast<uint32_t*>(slot - 8);
  words[0] = 0x037F;  // x87 control word
  words[2] = 0x1F80;  // MXCSR
  return slot - 8;
}
#endif

}  // namespace

const dim3& thread_idx() { return me().tid; }
const dim3& block_idx() { return g_block->block_idx; }
const dim3& block_dim() { return g_block->block_dim; }
const dim3& grid_dim() { return g_block->grid_dim; }

int lane_id() {
  const auto& t = me().tid;
  const auto& d = g_block->block_dim;
  return static_cast<int>((t.x + d.x * (t.y + d.y * t.z)) % kWarp);
}

static WarpState& my_warp() {
  const auto& t = me().tid;
  const auto& d = g_block->block_dim;
  return g_block->warps[(t.x + d.x * (t.y + d.y * t.z)) / kWarp];
}

void syncthreads() { wait_barrier(g_block->barrier, g_block->live); }

void syncwarp() {
  WarpState& w = my_warp();
  wait_barrier(w.barrier, w.live);
}

uint64_t warp_exchange(uint64_t mine, int src_lane) {
  WarpState& w = my_warp();
  w.slots[lane_id()] = mine;
  wait_barrier(w.barrier, w.live);
  const uint64_t r = w.slots[src_lane];
  wait_barrier(w.barrier, w.live);  // nobody overwrites a slot before all have read
  return r;
}

void warp_allgather(const uint32_t* mine, int n, uint32_t* all) {
  if (n < 1 || n > kGatherWords) {
    std::fprintf(stderr, "simt: warp_allgather of %d words per lane\n", n);
    std::abort();
  }
  WarpState& w = my_warp();
  std::memcpy(w.wide[lane_id()], mine, sizeof(uint32_t) * n);
  wait_barrier(w.barrier, w.live);
  for (int l = 0; l < kWarp; ++l) std::memcpy(all + l * n, w.wide[l], sizeof(uint32_t) * n);
  wait_barrier(w.barrier, w.live);  // nobody overwrites a slot before all have read
}

void mma_f16_m16n8k16(float* c, const uint32_t* a, const uint32_t* b) {
  // Every lane's fragments: a[4], b[2], c[4] (as bits).
  uint32_t mine[10], all[kWarp * 10];
  std::memcpy(mine, a, 16);
  std::memcpy(mine + 4, b, 8);
  std::memcpy(mine + 6, c, 16);
  warp_allgather(mine, 10, all);
  auto half_at = [](uint32_t word, int i) { return rayo::fp16_to_fp32(static_cast<uint16_t>(word >> (16 * i))); };
  // A[r][k]: lane (r % 8) * 4 + (k % 8) / 2, register (r >= 8) + 2 (k >= 8), half k % 2.
  auto A = [&](int r, int k) { return half_at(all[((r % 8) * 4 + (k % 8) / 2) * 10 + (r >= 8) + 2 * (k >= 8)], k % 2); };
  // B[k][n]: lane n * 4 + (k % 8) / 2, register (k >= 8), half k % 2.
  auto B = [&](int k, int n) { return half_at(all[(n * 4 + (k % 8) / 2) * 10 + 4 + (k >= 8)], k % 2); };
  const int lane = lane_id(), g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int r = g + (i >= 2 ? 8 : 0), n = 2 * t + (i & 1);
    float acc = 0.0f;
    for (int k = 0; k < 16; ++k) acc += A(r, k) * B(k, n);  // f16 products are exact in float
    c[i] += acc;
  }
}

void mma_s8_m16n8k16(int32_t* c, const uint32_t* a, uint32_t b) {
  // Every lane's fragments: a[2], b, c[4] (as bits).
  uint32_t mine[7], all[kWarp * 7];
  std::memcpy(mine, a, 8);
  mine[2] = b;
  std::memcpy(mine + 3, c, 16);
  warp_allgather(mine, 7, all);
  auto byte_at = [](uint32_t word, int i) { return static_cast<int32_t>(static_cast<int8_t>(word >> (8 * i))); };
  // A[r][k]: lane (r % 8) * 4 + k / 4, register r >= 8, byte k % 4.
  auto A = [&](int r, int k) { return byte_at(all[((r % 8) * 4 + k / 4) * 7 + (r >= 8)], k % 4); };
  // B[k][n]: lane n * 4 + k / 4, byte k % 4.
  auto B = [&](int k, int n) { return byte_at(all[(n * 4 + k / 4) * 7 + 2], k % 4); };
  const int lane = lane_id(), g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int r = g + (i >= 2 ? 8 : 0), n = 2 * t + (i & 1);
    int32_t acc = 0;
    for (int k = 0; k < 16; ++k) acc += A(r, k) * B(k, n);
    c[i] += acc;
  }
}

void ldmatrix_x4(uint32_t* r, const void* row) {
  uint32_t mine[2], all[kWarp * 2];
  const uintptr_t address = reinterpret_cast<uintptr_t>(row);
  static_assert(sizeof(uintptr_t) == 8, "a 64-bit address in two words");
  mine[0] = static_cast<uint32_t>(address), mine[1] = static_cast<uint32_t>(address >> 32);
  if (address % 16 != 0) {
    std::fprintf(stderr, "simt: ldmatrix row address not 16-byte aligned\n");
    std::abort();
  }
  warp_allgather(mine, 2, all);
  const int lane = lane_id();
  for (int j = 0; j < 4; ++j) {
    const int src = 8 * j + lane / 4;  // the lane that gave row lane / 4 of matrix j
    const uintptr_t at = static_cast<uintptr_t>(all[2 * src]) | (static_cast<uintptr_t>(all[2 * src + 1]) << 32);
    std::memcpy(&r[j], reinterpret_cast<const void*>(at + 4 * (lane % 4)), 4);
  }
  syncwarp();  // every lane has read before any lane writes what it read
}

uint32_t warp_ballot(bool pred) {
  WarpState& w = my_warp();
  w.slots[lane_id()] = pred;
  wait_barrier(w.barrier, w.live);
  uint32_t bits = 0;
  for (int l = 0; l < kWarp; ++l)
    if (w.slots[l]) bits |= 1u << l;
  wait_barrier(w.barrier, w.live);
  return bits;
}

void cp_async(void* dst, const void* src, int bytes) {
  if ((bytes != 4 && bytes != 8 && bytes != 16) || reinterpret_cast<uintptr_t>(dst) % bytes != 0 ||
      reinterpret_cast<uintptr_t>(src) % bytes != 0) {
    std::fprintf(stderr, "simt: cp.async of %d bytes from %p to %p (sizes 4, 8, 16, aligned)\n", bytes, src, dst);
    std::abort();
  }
  me().open_group.push_back(AsyncCopy{dst, src, bytes});
}

void cp_async_commit() {
  Fiber& f = me();
  f.committed.push_back(std::move(f.open_group));
  f.open_group.clear();
}

void cp_async_wait(int pending) {
  Fiber& f = me();
  while (static_cast<int>(f.committed.size()) > pending) {
    for (const AsyncCopy& c : f.committed.front()) std::memcpy(c.dst, c.src, static_cast<size_t>(c.bytes));
    f.committed.erase(f.committed.begin());
  }
}

void* dynamic_shared(size_t bytes) {
  if (bytes > g_block->dynamic_shared.size()) {
    std::fprintf(stderr, "simt: a kernel wants %zu bytes of dynamic shared memory, the launch gave %zu\n", bytes,
                 g_block->dynamic_shared.size());
    std::abort();
  }
  return g_block->dynamic_shared.data();
}

const LaunchStats& last_launch() { return g_stats; }

void launch(dim3 grid, dim3 block, const std::function<void()>& body, size_t dynamic_shared_bytes) {
  const int n = static_cast<int>(block.x * block.y * block.z);
  if (n <= 0 || n > 1024) {
    std::fprintf(stderr, "simt: bad block size %d\n", n);
    std::abort();
  }
  static std::vector<std::unique_ptr<char[]>> stacks;  // reused across launches
  while (static_cast<int>(stacks.size()) < n) stacks.push_back(std::make_unique<char[]>(kStackBytes));
  g_stats = LaunchStats{};
  BlockState state;
  state.block_dim = block;
  state.grid_dim = grid;
  state.body = &body;
  state.dynamic_shared.resize(dynamic_shared_bytes);
  g_block = &state;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        state.block_idx = dim3(bx, by, bz);
        state.fibers.assign(n, Fiber{});
        state.warps.assign((n + kWarp - 1) / kWarp, WarpState{});
        for (int i = 0; i < n; ++i) state.warps[i / kWarp].live++;
        state.barrier = Barrier{};
        state.live = n;
        // Shared memory starts undefined on a GPU: garbage here, so that reads
        // of what no thread wrote show in the results.
        std::fill(state.dynamic_shared.begin(), state.dynamic_shared.end(), static_cast<unsigned char>(0xA5));
        for (int i = 0; i < n; ++i) {
          Fiber& f = state.fibers[i];
          f.tid = dim3(i % block.x, (i / block.x) % block.y, i / (block.x * block.y));
          f.stack = stacks[i].get();
          f.stack_size = kStackBytes;
#ifdef SIMT_FAST_SWITCH
          f.sp = initial_stack(stacks[i].get(), kStackBytes);
#else
          getcontext(&f.ctx);
          f.ctx.uc_stack.ss_sp = stacks[i].get();
          f.ctx.uc_stack.ss_size = kStackBytes;
          f.ctx.uc_link = &state.scheduler;
          makecontext(&f.ctx, fiber_main, 0);
#endif
        }
        while (state.live > 0) {
          const uint64_t before = state.progress;
          bool all_waiting = true;
          for (int i = 0; i < n; ++i) {
            if (state.fibers[i].done) continue;
            state.current = i;
            void* fake_stack = nullptr;
            asan_start_switch(&fake_stack, state.fibers[i].stack, state.fibers[i].stack_size);
#ifdef SIMT_FAST_SWITCH
            simt_switch(&state.scheduler_sp, state.fibers[i].sp);
#else
            swapcontext(&state.scheduler, &state.fibers[i].ctx);
#endif
            asan_finish_switch(fake_stack, nullptr, nullptr);
            if (!state.fibers[i].done && !state.fibers[i].waiting) all_waiting = false;
          }
          if (state.live > 0 && all_waiting && state.progress == before) {
            std::fprintf(stderr,
                         "simt: deadlock in block (%u,%u,%u): every live thread waits at a barrier that cannot "
                         "complete (a shuffle or __syncthreads in divergent code?)\n",
                         bx, by, bz);
            std::abort();
          }
        }
        ++g_stats.blocks;
        g_stats.threads += n;
      }
  g_block = nullptr;
}

}  // namespace simt
