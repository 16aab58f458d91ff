#include "backends/cpu/thread_pool.h"

#include <chrono>

#include "common/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rayo::cpu {
namespace {

// How long an idle thread keeps spinning before it sleeps. Long enough to cover
// the gap between two dispatches of one decode step, short enough not to burn a
// core while the process does something else.
constexpr auto kSpinTime = std::chrono::microseconds(100);

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until pred() holds or the spin time runs out; returns pred(). After a
// short burst of pause instructions it yields between checks, so that when the
// machine has more runnable threads than cores (other processes, or a pool
// larger than the core count) the thread being waited for gets to run.
template <typename Pred>
bool spin_until(Pred pred) {
  for (int i = 0; i < 2000; ++i) {
    if (pred()) return true;
    cpu_relax();
  }
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 16; ++i) {
      if (pred()) return true;
      std::this_thread::yield();
    }
    if (std::chrono::steady_clock::now() - start > kSpinTime) return pred();
  }
}

// Set while this thread executes a task, to reject nested runs (they would deadlock).
thread_local const ThreadPool* t_running_pool = nullptr;

constexpr uint64_t kArrivedMask = 0xffff;
constexpr uint64_t kLiveShift = 16;
constexpr uint64_t kLiveMask = 0xffffull << kLiveShift;
constexpr uint64_t kGenShift = 32;

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads) {
  if (n_threads < 1 || n_threads > 1024) fail("thread count must be between 1 and 1024, got ", n_threads);
  workers_.reserve(n_threads - 1);
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_main(i); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true, std::memory_order_release);
  run_generation_.fetch_add(1, std::memory_order_acq_rel);
  run_generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_erased(Trampoline fn, void* ctx) {
  RAYO_CHECK(t_running_pool == nullptr, "(ThreadPool::run called from inside a run)");
  error_ = nullptr;
  if (n_threads_ == 1) {
    barrier_word_.store(uint64_t{1} << kLiveShift, std::memory_order_relaxed);
    t_running_pool = this;
    try {
      fn(ctx, 0, 1);
    } catch (...) {
      t_running_pool = nullptr;
      throw;
    }
    t_running_pool = nullptr;
    return;
  }
  task_ = fn;
  task_ctx_ = ctx;
  const uint64_t gen = barrier_word_.load(std::memory_order_relaxed) >> kGenShift;
  barrier_word_.store((gen << kGenShift) | (uint64_t(n_threads_) << kLiveShift), std::memory_order_relaxed);
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  run_generation_.fetch_add(1);  // publishes the task (seq_cst: pairs with sleepers_)
  if (sleepers_.load() > 0) run_generation_.notify_all();

  execute(0);

  if (!spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; })) {
    for (uint32_t p; (p = pending_.load(std::memory_order_acquire)) != 0;) pending_.wait(p);
  }
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::execute(int index) {
  t_running_pool = this;
  try {
    task_(task_ctx_, index, n_threads_);
  } catch (...) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = std::current_exception();
  }
  t_running_pool = nullptr;
  leave_barrier_group();
}

void ThreadPool::worker_main(int index) {
  uint32_t seen = 0;
  for (;;) {
    const auto changed = [&] { return run_generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(changed)) {
      sleepers_.fetch_add(1);
      while (!changed()) run_generation_.wait(seen, std::memory_order_acquire);
      sleepers_.fetch_sub(1, std::memory_order_acq_rel);
    }
    seen = run_generation_.load(std::memory_order_acquire);
    if (stopping_.load(std::memory_order_acquire)) return;
    execute(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

// Releases the waiters of barrier generation `gen` (the CAS already advanced the word).
static inline void release_barrier(std::atomic<uint32_t>& generation, uint32_t next) {
  generation.store(next, std::memory_order_release);
  generation.notify_all();
}

void ThreadPool::barrier() {
  if (n_threads_ == 1) return;
  RAYO_CHECK(t_running_pool == this, "(ThreadPool::barrier called outside a run)");
  uint64_t word = barrier_word_.load(std::memory_order_acquire);
  uint64_t next;
  uint32_t gen;
  for (;;) {
    gen = static_cast<uint32_t>(word >> kGenShift);
    const uint64_t arrived = (word & kArrivedMask) + 1;
    const uint64_t live = (word & kLiveMask) >> kLiveShift;
    if (arrived == live)  // last one in: open the barrier
      next = (uint64_t(gen + 1) << kGenShift) | (word & kLiveMask);
    else
      next = (word & ~kArrivedMask) | arrived;
    if (barrier_word_.compare_exchange_weak(word, next, std::memory_order_acq_rel)) break;
  }
  if ((next >> kGenShift) != gen) {
    release_barrier(barrier_generation_, gen + 1);
    return;
  }
  const auto passed = [&] { return barrier_generation_.load(std::memory_order_acquire) != gen; };
  if (!spin_until(passed))
    while (!passed()) barrier_generation_.wait(gen, std::memory_order_acquire);
}

void ThreadPool::leave_barrier_group() {
  uint64_t word = barrier_word_.load(std::memory_order_acquire);
  uint64_t next;
  uint32_t gen;
  for (;;) {
    gen = static_cast<uint32_t>(word >> kGenShift);
    const uint64_t arrived = word & kArrivedMask;
    const uint64_t live = ((word & kLiveMask) >> kLiveShift) - 1;
    if (arrived > 0 && arrived == live)  // everyone left is waiting: open the barrier
      next = (uint64_t(gen + 1) << kGenShift) | (live << kLiveShift);
    else
      next = (word & ~kLiveMask) | (live << kLiveShift);
    if (barrier_word_.compare_exchange_weak(word, next, std::memory_order_acq_rel)) break;
  }
  if ((next >> kGenShift) != gen) release_barrier(barrier_generation_, gen + 1);
}

}  // namespace rayo::cpu
