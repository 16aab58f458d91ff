#include "backends/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "common/error.h"

namespace rayo::cpu {
namespace {

TEST(ThreadPool, RejectsBadThreadCounts) {
  EXPECT_THROW(ThreadPool(0), Error);
  EXPECT_THROW(ThreadPool(-3), Error);
}

TEST(ThreadPool, EveryIndexRunsExactlyOnce) {
  for (int n = 1; n <= 8; ++n) {
    ThreadPool pool(n);
    EXPECT_EQ(pool.size(), n);
    std::vector<std::atomic<int>> hits(n);
    std::atomic<int> bad_count{0};
    pool.run([&](int i, int nt) {
      if (nt != n || i < 0 || i >= n) bad_count++;
      else hits[i]++;
    });
    EXPECT_EQ(bad_count.load(), 0);
    for (int i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "thread " << i << " of " << n;
  }
}

TEST(ThreadPool, CallerIsThreadZero) {
  ThreadPool pool(3);
  const auto caller = std::this_thread::get_id();
  std::thread::id seen0, seen1;
  pool.run([&](int i, int) {
    if (i == 0) seen0 = std::this_thread::get_id();
    if (i == 1) seen1 = std::this_thread::get_id();
  });
  EXPECT_EQ(seen0, caller);
  EXPECT_NE(seen1, caller);
}

TEST(ThreadPool, ManyRunsSeeAllPreviousWrites) {
  ThreadPool pool(4);
  std::vector<int64_t> slots(4, 0);
  for (int run = 1; run <= 5000; ++run) {
    pool.run([&](int i, int) { slots[i] += 1; });
    // run() returning means every worker's write is visible here.
    for (int i = 0; i < 4; ++i) ASSERT_EQ(slots[i], run) << "slot " << i;
  }
}

TEST(ThreadPool, BarrierSeparatesPhases) {
  for (int n = 1; n <= 6; ++n) {
    ThreadPool pool(n);
    for (int rep = 0; rep < 200; ++rep) {
      std::vector<int> a(n, 0), b(n, 0);
      std::atomic<int> violations{0};
      pool.run([&](int i, int nt) {
        a[i] = i + 1;
        pool.barrier();
        // Every thread's phase-1 write is visible after the barrier.
        int sum = 0;
        for (int j = 0; j < nt; ++j) sum += a[j];
        b[i] = sum;
        pool.barrier();
        for (int j = 0; j < nt; ++j)
          if (b[j] != nt * (nt + 1) / 2) violations++;
      });
      ASSERT_EQ(violations.load(), 0) << n << " threads, repetition " << rep;
    }
  }
}

TEST(ThreadPool, ExceptionReachesCallerWithoutDeadlock) {
  ThreadPool pool(4);
  for (int thrower = 0; thrower < 4; ++thrower) {
    std::atomic<int> finished{0};
    try {
      pool.run([&](int i, int) {
        if (i == thrower) throw std::runtime_error("boom " + std::to_string(i));
        pool.barrier();  // must not wait for the thread that threw
        pool.barrier();
        finished++;
      });
      FAIL() << "no exception from thread " << thrower;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "boom " + std::to_string(thrower));
    }
    EXPECT_EQ(finished.load(), 3);
  }
  // The pool still works afterwards.
  std::atomic<int> count{0};
  pool.run([&](int, int) { count++; });
  EXPECT_EQ(count.load(), 4);
}

TEST(ThreadPool, SingleThreadPoolRethrows) {
  ThreadPool pool(1);
  EXPECT_THROW(pool.run([](int, int) { throw Error("bad"); }), Error);
  int ran = 0;
  pool.run([&](int i, int n) {
    pool.barrier();
    ran = i + n;
  });
  EXPECT_EQ(ran, 1);
}

TEST(ThreadPool, NestedRunIsRejected) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.run([&](int i, int) {
    if (i == 0) pool.run([](int, int) {});
  }),
               Error);
}

TEST(ThreadPool, WorkersSleepAndWakeUp) {
  ThreadPool pool(3);
  std::atomic<int> count{0};
  for (int rep = 0; rep < 3; ++rep) {
    // Longer than the spin time, so the workers are asleep on the futex.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pool.run([&](int, int) { count++; });
  }
  EXPECT_EQ(count.load(), 9);
}

}  // namespace
}  // namespace rayo::cpu
