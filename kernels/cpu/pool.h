// The cpu backend's threads: a small pool that runs one function on N threads at once.
//
// Pool(n) starts n-1 workers; run(f) calls f(tid, n) on each of them and on the caller
// (tid 0) and returns when all have returned. Workers poll for a short while after each
// job (a sweep calls run() back to back, and waking a sleeping thread costs ~5-50 µs,
// more than a small GEMM takes), then yield the core for a while, then sleep on a
// condition variable; the caller waiting for them polls, then yields (pool.cpp says why).
// No allocation per call: f is passed by reference.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lb::cpu {

class Pool {
 public:
  explicit Pool(int threads);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  int size() const { return int(workers_.size()) + 1; }
  // f(tid, n) on every thread, tid 0 on the caller; returns when all are done.
  void run(const std::function<void(int tid, int n)>& f);

 private:
  void work(int tid);

  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable wake_;
};

// The part [first, last) of [0, n) that thread tid of `threads` takes, in whole units of
// `grain` (the last part takes the remainder).
struct Range {
  int64_t first, last;
};
Range split(int64_t n, int64_t grain, int tid, int threads);

}  // namespace lb::cpu
