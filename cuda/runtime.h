// What the harness needs from the GPU side, in one place: is a GPU usable, event
// timing with spin or blocking waits, an L2 flush for cold runs, NVML utilisation
// (loaded at run time), and the facts that go into a results file's context.
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace lb::cuda {

// Empty when device 0 can run kernels, else one line saying why not. Cached.
const std::string& why_no_gpu();

struct DeviceFacts {
  std::string name;  // "NVIDIA H200"
  int major = 0, minor = 0;
  size_t l2_bytes = 0;
  size_t memory_bytes = 0;
  int sm_count = 0;
};
const DeviceFacts& device_facts();  // call only when why_no_gpu() is empty

// Times device work on the default stream with a pair of CUDA events. stop() waits for
// the work: spinning on the event (a CPU core stays busy) or, with blocking = true,
// sleeping until the driver wakes the thread (cudaEventBlockingSync).
//
// With hold (the default; LAYERBENCH_GPU_HOLD=0 turns it off), start() first queues a
// device-side wait (cuda/hold.h) that stop() releases, so the start event is reached only
// once the timed work is queued: the pair brackets device work, not launch overhead. A
// wait that ends by its timeout (kHoldTimeoutNs: run() waited for the device inside)
// turns the hold off for this timer, said once on stderr.
class EventTimer {
 public:
  explicit EventTimer(bool blocking, bool hold = hold_wanted());
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start();
  double stop();  // seconds between start() and stop() on the device

  static bool hold_wanted();  // LAYERBENCH_GPU_HOLD is not "0"
  static constexpr unsigned long long kHoldTimeoutNs = 20'000'000;

 private:
  void* start_ = nullptr;
  void* stop_ = nullptr;
  int* flags_ = nullptr;         // pinned, mapped: [0] release, [1] timed out; null: no hold
  int* device_flags_ = nullptr;  // their device view; null once the hold is off
  bool holding_ = false;
};

// How GPU cases are timed, for the results context.
std::string gpu_timing_method();

// Overwrites a buffer twice the size of L2 so the next launch starts cold.
void flush_l2();

// Device-to-device copy bandwidth in bytes/s (read + written), best of 10 copies.
double copy_bandwidth(size_t bytes);

// Waits for all device work.
void synchronize();

// After a failure: empty when the context still works, else the CUDA error that stays
// with it (cudaErrorIllegalAddress, ...: every later call returns it). Non-sticky errors
// are cleared on the way.
std::string sticky_error();

// GPU utilisation from NVML (libnvidia-ml.so.1, dlopen'ed: the binary runs where no
// driver is installed). Sampled on a side thread between start() and stop().
class GpuUtilSampler {
 public:
  static bool available();  // NVML found and initialised
  void start();
  void stop();
  double average() const { return average_; }
  double peak() const { return peak_; }
  ~GpuUtilSampler() { stop(); }

 private:
  std::thread thread_;
  std::atomic<bool> running_{false};
  double average_ = -1, peak_ = -1;
  double sum_ = 0;
  int samples_ = 0;
};

// "9.19.0" from a CUDA library's version number (major * 10000 + minor * 100 + patch), as
// cublasLtGetVersion() and cudnnGetVersion() return it.
std::string dotted_version(size_t v);

// Context entries: GPU model, clocks, driver, CUDA runtime, cuBLAS and cuDNN versions.
std::vector<std::pair<std::string, std::string>> gpu_context();

}  // namespace lb::cuda
