#include "bench/harness/probes.h"

#include <malloc.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "kernels/device.h"

namespace lb::bench {
namespace {

// A "Key:   123 kB" line of a /proc file, in bytes; 0 if absent.
size_t proc_kb(const char* path, const char* key) {
  std::ifstream in(path);
  const size_t n = std::strlen(key);
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':')
      return size_t(std::stoull(line.substr(n + 1))) * 1024;
  return 0;
}

}  // namespace

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

size_t rss_bytes() {
  return proc_kb("/proc/self/status", "VmRSS");
}
size_t rss_peak_bytes() {
  return proc_kb("/proc/self/status", "VmHWM");
}

bool reset_rss_peak() {
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

void use_honest_allocator() {
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

void release_free_memory() {
  malloc_trim(0);
}

size_t available_bytes() {
  return host_available_bytes();
}

SchedTimes sched_times() {
  SchedTimes t;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "schedstat");
    double run_ns = 0, wait_ns = 0;
    if (!(in >> run_ns >> wait_ns)) continue;  // a thread that ended meanwhile
    t.threads[std::stol(task.path().filename().string())] = {run_ns * 1e-9, wait_ns * 1e-9};
    t.available = true;
  }
  return t;
}

void CpuSampler::start() {
  stop();
  peak_ = 0;
  start_sched_ = sched_times();
  start_wall_ = wall_seconds();
  start_cpu_ = process_cpu_seconds();
  running_ = true;
  thread_ = std::thread([this] {
    double wall = start_wall_, cpu = start_cpu_;
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::duration<double>(interval_), [this] { return !running_; })) {
      const double w = wall_seconds(), c = process_cpu_seconds();
      if (w > wall) {
        const double util = 100.0 * (c - cpu) / (w - wall);
        if (util > peak_) peak_ = util;
      }
      wall = w;
      cpu = c;
    }
  });
}

void CpuSampler::stop() {
  if (!thread_.joinable()) return;
  // Both accountings at one moment, the sampler's own thread still running: the process
  // clock counts its CPU time, and so must the scheduler's (read after the join, it missed
  // it, and a timed loop on one thread read 106 % against 100 % beside a busy core).
  const double w = wall_seconds(), c = process_cpu_seconds();
  const SchedTimes sched = sched_times();
  {
    std::lock_guard lock(mutex_);
    running_ = false;
  }
  wake_.notify_one();
  thread_.join();
  const double wall = w - start_wall_;
  average_ = wall > 0 ? 100.0 * (c - start_cpu_) / wall : 0.0;
  if (sched.available && start_sched_.available && wall > 0) {
    double run = 0, wait = 0;
    for (const auto& [tid, now] : sched.threads) {
      const auto then = start_sched_.threads.find(tid);
      const std::pair<double, double> from =
          then == start_sched_.threads.end() ? std::pair{0.0, 0.0} : then->second;
      run += now.first - from.first;
      wait += now.second - from.second;
    }
    sched_run_ = 100.0 * run / wall;
    sched_wait_ = 100.0 * wait / wall;
  }
  // A loop shorter than one interval has no interval of its own: its peak is its average.
  if (peak_ < average_) peak_ = average_;
}

}  // namespace lb::bench
