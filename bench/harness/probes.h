// Probes of this process and machine, read from Linux: CPU time, resident memory and
// its high-water mark, available memory, and a side thread that samples CPU
// utilisation so a run reports its peak as well as its average.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

namespace lb::bench {

double wall_seconds();         // steady clock
double process_cpu_seconds();  // all threads of this process, user + system

// Resident set size now, and its high-water mark since the last reset (VmRSS, VmHWM).
size_t rss_bytes();
size_t rss_peak_bytes();
// Resets the high-water mark to the current RSS (writes 5 to /proc/self/clear_refs);
// false where the kernel does not allow it, and then peaks are since process start.
bool reset_rss_peak();

// Makes resident memory an honest measure of what a case holds: a fixed mmap threshold
// (glibc otherwise raises it after each free, so later large buffers come from a heap
// whose freed pages stay resident and are not counted again), and a trim of free heap
// pages before each case's baseline.
void use_honest_allocator();
void release_free_memory();

// What can be allocated without swapping or the OOM killer: MemAvailable, or less where
// the memory cgroup's limit leaves less (lb::host_available_bytes, kernels/device.h).
size_t available_bytes();

// The scheduler's own accounting of this process, summed over its threads
// (/proc/self/task/*/schedstat): seconds on a CPU, and seconds runnable but waiting for
// one, per thread. run + wait is what the threads asked for; wait is what a busy machine
// withheld. Over an interval, a thread counts from its start or the interval's, whichever
// is later; one that ended within it is left out (its last figures are gone with it).
struct SchedTimes {
  std::map<long, std::pair<double, double>> threads;  // thread id -> (run, wait) seconds so far
  bool available = false;                             // false where the kernel has no schedstat
};
SchedTimes sched_times();

// CPU utilisation as top shows it (100 = one core busy), averaged between start()
// and stop(), and the highest value seen over any sampling interval in between; and
// the scheduler's view of the same interval, in the same unit (-1 where unavailable).
class CpuSampler {
 public:
  explicit CpuSampler(double interval_seconds = 0.01) : interval_(interval_seconds) {}
  ~CpuSampler() { stop(); }
  void start();
  void stop();
  double average() const { return average_; }
  double peak() const { return peak_; }
  double sched_run() const { return sched_run_; }    // on a CPU
  double sched_wait() const { return sched_wait_; }  // runnable, waiting for a CPU

 private:
  double interval_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;  // stop() wakes the sampler at once instead of waiting out its sleep
  bool running_ = false;
  double start_wall_ = 0, start_cpu_ = 0;
  double average_ = 0, sched_run_ = -1, sched_wait_ = -1;
  SchedTimes start_sched_;
  std::atomic<double> peak_{0};
};

}  // namespace lb::bench
