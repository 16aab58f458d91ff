#pragma once
// A persistent pool of worker threads for the CPU backend.
//
// run(fn) calls fn(thread_index, n_threads) once on every thread of the pool,
// the calling thread being index 0, and returns when all calls have returned.
// A decode step dispatches ~10 runs per layer, so dispatch latency matters:
// idle workers spin for a short while (a few tens of microseconds) watching a
// generation counter before they sleep on a futex, and a run allocates nothing
// (fn is passed by reference through a type-erased trampoline).
//
// barrier() inside fn waits until every thread still inside the current run
// has reached it. A thread whose fn has returned (or thrown) no longer counts,
// so an exception on one thread cannot leave the others waiting forever.
// The first exception thrown by any thread is rethrown by run() on the caller.
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace rayo::cpu {

class ThreadPool {
 public:
  // n_threads >= 1 counts the calling thread: ThreadPool(2) starts one worker.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  template <typename Fn>
  void run(Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    run_erased([](void* ctx, int i, int n) { (*static_cast<F*>(ctx))(i, n); },
               const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Waits for the other threads of the current run; only valid inside run().
  void barrier();

 private:
  using Trampoline = void (*)(void* ctx, int thread_index, int n_threads);

  void run_erased(Trampoline fn, void* ctx);
  void worker_main(int index);
  void execute(int index);     // runs the current task on this thread, capturing exceptions
  void leave_barrier_group();  // this thread's fn is done: barriers stop waiting for it

  const int n_threads_;
  std::vector<std::thread> workers_;

  // The current task, published by bumping run_generation_.
  Trampoline task_ = nullptr;
  void* task_ctx_ = nullptr;
  alignas(64) std::atomic<uint32_t> run_generation_{0};
  alignas(64) std::atomic<uint32_t> pending_{0};  // workers still inside the run
  alignas(64) std::atomic<uint32_t> sleepers_{0};  // workers blocked on the futex
  std::atomic<bool> stopping_{false};

  // Barrier state: one word so that arriving and leaving are a single CAS.
  // bits 0-15 arrived, bits 16-31 live (threads still inside fn), 32-63 generation.
  alignas(64) std::atomic<uint64_t> barrier_word_{0};
  alignas(64) std::atomic<uint32_t> barrier_generation_{0};

  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace rayo::cpu
