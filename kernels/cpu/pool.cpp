#include "kernels/cpu/pool.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/common.h"

namespace lb::cpu {
namespace {

// Polling before yielding the core: ~10 µs (pause is ~40-140 cycles on recent x86). A
// worker then yields for a while before it sleeps, and the caller waiting for the workers
// yields too: with another process on the machine, a thread that spins without yielding
// can hold the core the thread it waits for needs, for a whole scheduler slice (measured
// here under load: a 21 µs depthwise layer took 1.1 ms on two threads).
constexpr int kSpins = 2000;
constexpr int kYields = 200;

inline void relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

}  // namespace

Pool::Pool(int threads) {
  for (int tid = 1; tid < std::max(threads, 1); ++tid)
    workers_.emplace_back([this, tid] { work(tid); });
}

Pool::~Pool() {
  {
    std::lock_guard lock(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& w : workers_)
    w.join();
}

void Pool::run(FunctionRef<void(int, int)> f) {
  const int n = size();
  if (n == 1) {
    f(0, 1);
    return;
  }
  job_ = &f;
  pending_.store(n - 1, std::memory_order_relaxed);
  {
    std::lock_guard lock(mu_);  // a worker between its last poll and wait() sees the new generation
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  f(0, n);
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kSpins)
      relax();
    else
      std::this_thread::yield();
  }
}

void Pool::work(int tid) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && spin < kSpins + kYields && !stop_.load(std::memory_order_relaxed);
         ++spin) {
      if (spin < kSpins)
        relax();
      else
        std::this_thread::yield();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
      if (stop_.load()) return;
      g = generation_.load(std::memory_order_acquire);
    }
    if (stop_.load(std::memory_order_relaxed)) return;
    seen = g;
    (*job_)(tid, size());
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

Range split(int64_t n, int64_t grain, int tid, int threads) {
  const int64_t units = ceil_div(n, grain);
  const int64_t first = units * tid / threads, last = units * (tid + 1) / threads;
  return {std::min(n, first * grain), std::min(n, last * grain)};
}

}  // namespace lb::cpu
