// What the harness needs of a device besides its kernels: a Timer for the timed work,
// per-case memory and utilisation accounting, a cache flush for cold cases, the
// device's peak rates and the facts that go into a results file's context. The host's
// runtime is built in (kernels/device.cpp); the GPU's comes from cuda/
// (cuda/device_runtime.cpp) when CUDA is built, so that bench/ never names CUDA.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel.h"

namespace lb {

// Times the work queued between start() and stop(). Host: the steady clock around the
// call. GPU: a CUDA event pair, waited for by spinning or blocking (Case::blocking).
class Timer {
 public:
  virtual ~Timer() = default;
  virtual void start() = 0;
  virtual double stop() = 0;  // seconds of work since start(), once it has finished
};

// Counters a case reports, by name (lb_device_peak_bytes, lb_gpu_util_avg, ...).
using Counters = std::map<std::string, double>;

// One case's device-side measurements, from before prepare() to after the timed loop.
class DeviceProbe {
 public:
  virtual ~DeviceProbe() = default;
  virtual void before_prepare() {}  // the baseline: what the device held before the case
  virtual void after_setup() {}     // after prepare() and the verified run
  virtual void begin_timed() {}
  // busy = the Timer's seconds over the loop, wall = the host's; adds the counters.
  virtual void end_timed(double busy_seconds, double wall_seconds, Counters& out) {
    (void)busy_seconds, (void)wall_seconds, (void)out;
  }
};

// A device's ceiling: FLOP/s of its best GEMM for a dtype, or bytes/s of a copy.
struct DevicePeak {
  std::string kind;  // "gpu_<dtype>_gemm", "gpu_d2d_copy"
  double ops_per_second = 0;
  std::string how;
};

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  // Empty when the device can run kernels, else one line saying why not.
  virtual std::string why_unavailable() const = 0;
  // Empty when a case needing `bytes` of this device's memory may fit, else the
  // out-of-memory reason (host memory is the harness's to check, for every device).
  virtual std::string check_fits(double bytes) const {
    (void)bytes;
    return {};
  }
  virtual std::unique_ptr<Timer> timer(bool blocking) const = 0;
  // Evicts the device's caches before a cold case's timed run (outside the timed
  // region). The host's cold runs rotate copies of the inputs instead (CaseSession).
  virtual void flush_caches() const {}
  // Whether run() reads the host tensors, so that a cold case can rotate copies of its
  // inputs (the host); a GPU kernel reads the device copies it made in prepare().
  virtual bool cold_by_copies() const { return true; }
  virtual std::unique_ptr<DeviceProbe> probe() const { return std::make_unique<DeviceProbe>(); }
  // Measured once per machine by the harness (and cached); empty for the host, whose
  // peaks are instruction loops (bench/harness/peaks.cpp).
  virtual std::vector<DevicePeak> measure_peaks() const { return {}; }
  // Asked after a case on this device failed: empty when the device still works, else
  // why not — a CUDA error that stays with the context (an illegal address in a kernel)
  // makes every later call fail, each blamed on an innocent kernel.
  virtual std::string why_broken() const { return {}; }
  // Results-context entries: model, driver, library versions, clocks.
  virtual std::vector<std::pair<std::string, std::string>> context() const { return {}; }
  // Device memory a session shares between kernels (a graph's arena, Kernel::bind): `bytes`
  // of it, freed with the last copy of the pointer; copies to and from the host, and a wait
  // for the work queued. The host's runtime has none: nullptr.
  virtual std::shared_ptr<std::byte> device_memory(size_t bytes) const {
    (void)bytes;
    return nullptr;
  }
  virtual void to_device(void* device, const void* host, size_t bytes) const {
    (void)device, (void)host, (void)bytes;
  }
  virtual void to_host(void* host, const void* device, size_t bytes) const {
    (void)device, (void)host, (void)bytes;
  }
  virtual void synchronize() const {}
};

// "12.34": bytes in GiB with two decimals, as out-of-memory reasons give them.
std::string gib(double bytes);

// The host memory this process may still allocate, in bytes: MemAvailable from
// /proc/meminfo, or less where its memory cgroup leaves less — v2: memory.max minus
// memory.current, v1: memory.limit_in_bytes minus memory.usage_in_bytes, each less the
// inactive file cache the kernel would reclaim first, at the process's own cgroup and
// every one above it. Inside a memory-limited container MemAvailable is the host's,
// and a case sized by it alone is killed by the OOM killer, taking the sweep with it.
// 0 when nothing is known. `root` is prefixed to /proc and /sys (tests use a fake tree).
size_t host_available_bytes(const std::string& root = "");

// Empty when a case of `p` may fit in host memory (host_available_bytes()), else the
// out-of-memory reason: our tensors (the model's inference bytes) plus the pristine
// copy of the inputs that verification keeps. Asked before anything is allocated, so
// that a case too big is out_of_memory rather than half-allocated, swapped or killed;
// a GPU case also asks its runtime's check_fits().
std::string check_host_memory(const Problem& p);

// The runtime of a device: the host's always; the GPU's where cuda/ is built (else
// one whose why_unavailable() says so). Defined in kernels/backends.cpp.
const DeviceRuntime& device_runtime(Device d);

const DeviceRuntime& host_runtime();    // kernels/device.cpp
const DeviceRuntime& no_gpu_runtime();  // kernels/device.cpp: builds without cuda/
const DeviceRuntime& cuda_runtime();    // cuda/device_runtime.cpp, built with LB_HAVE_CUDA

}  // namespace lb
