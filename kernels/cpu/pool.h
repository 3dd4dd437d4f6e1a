// The cpu backend's threads: a small pool that runs one function on N threads at once.
//
// Pool(n) starts n-1 workers; run(f) calls f(tid, n) on each of them and on the caller
// (tid 0) and returns when all have returned. Workers poll for a short while after each
// job (a sweep calls run() back to back, and waking a sleeping thread costs ~5-50 µs,
// more than a small GEMM takes), then yield the core for a while, then sleep on a
// condition variable; the caller waiting for them polls, then yields (pool.cpp says why).
// No allocation per call: f is a FunctionRef.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace lb::cpu {

// A non-owning reference to a callable (what std::function_ref will be): two pointers, no
// allocation — std::function would allocate for a lambda capturing more than two
// pointers, on every call of a timed run(). The callable must outlive the reference: pass
// a lambda straight to a parameter, or name it before storing a reference to it.
template <class Sig>
class FunctionRef;
template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, Args...>)
      FunctionRef(F&& f)  // NOLINT(google-explicit-constructor): used as a parameter type
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* obj, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(obj))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(obj_, std::forward<Args>(args)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

class Pool {
 public:
  explicit Pool(int threads);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  int size() const { return int(workers_.size()) + 1; }
  // f(tid, n) on every thread, tid 0 on the caller; returns when all are done.
  void run(FunctionRef<void(int tid, int n)> f);

 private:
  void work(int tid);

  std::vector<std::thread> workers_;
  const FunctionRef<void(int, int)>* job_ = nullptr;
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
