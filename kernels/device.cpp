#include "kernels/device.h"

#include <chrono>
#include <cstdio>

namespace lb {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The host's work is done when run() returns: the steady clock around the call.
class HostTimer final : public Timer {
 public:
  void start() override { start_ = now_seconds(); }
  double stop() override { return now_seconds() - start_; }

 private:
  double start_ = 0;
};

class HostRuntime final : public DeviceRuntime {
 public:
  std::string why_unavailable() const override { return {}; }
  std::unique_ptr<Timer> timer(bool) const override { return std::make_unique<HostTimer>(); }
};

// Where cuda/ is not built, GPU kernels are not registered either; this answers for
// code that asks anyway.
class NoGpuRuntime final : public DeviceRuntime {
 public:
  std::string why_unavailable() const override { return "built without CUDA"; }
  std::unique_ptr<Timer> timer(bool) const override { return std::make_unique<HostTimer>(); }
};

}  // namespace

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

const DeviceRuntime& host_runtime() {
  static const HostRuntime r;
  return r;
}

const DeviceRuntime& no_gpu_runtime() {
  static const NoGpuRuntime r;
  return r;
}

}  // namespace lb
