#include "cuda/runtime.h"

#include <dlfcn.h>

#include <chrono>
#include <mutex>

#include "cuda/check.h"
#include "cuda/memory.h"

namespace lb::cuda {
namespace {

// The few NVML entry points we use, declared here so no NVML header or library is
// needed at build time. Signatures follow nvml.h (NVML API version 2 names).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct NvmlUtilization {
  unsigned int gpu, memory;
};
struct Nvml {
  bool ok = false;
  nvmlDevice_t device = nullptr;
  nvmlReturn_t (*get_utilization)(nvmlDevice_t, NvmlUtilization*) = nullptr;
  nvmlReturn_t (*get_clock)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned int) = nullptr;
};

const Nvml& nvml() {
  static const Nvml n = [] {
    Nvml n;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return n;
    auto init = reinterpret_cast<nvmlReturn_t (*)()>(dlsym(lib, "nvmlInit_v2"));
    auto by_index = reinterpret_cast<nvmlReturn_t (*)(unsigned int, nvmlDevice_t*)>(
        dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    n.get_utilization =
        reinterpret_cast<decltype(n.get_utilization)>(dlsym(lib, "nvmlDeviceGetUtilizationRates"));
    n.get_clock = reinterpret_cast<decltype(n.get_clock)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    n.driver_version = reinterpret_cast<decltype(n.driver_version)>(dlsym(lib, "nvmlSystemGetDriverVersion"));
    if (!init || !by_index || !n.get_utilization || init() != 0 || by_index(0, &n.device) != 0) return n;
    n.ok = true;
    return n;
  }();
  return n;
}

}  // namespace

const std::string& why_no_gpu() {
  static const std::string why = [] {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    if (count == 0) return std::string("no CUDA device");
    return std::string();
  }();
  return why;
}

const DeviceFacts& device_facts() {
  static const DeviceFacts f = [] {
    cudaDeviceProp p{};
    LB_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
    return DeviceFacts{
        p.name, p.major, p.minor, size_t(p.l2CacheSize), p.totalGlobalMem, p.multiProcessorCount};
  }();
  return f;
}

EventTimer::EventTimer(bool blocking) {
  cudaEvent_t a = nullptr, b = nullptr;
  LB_CUDA_CHECK(cudaEventCreate(&a));
  LB_CUDA_CHECK(cudaEventCreateWithFlags(&b, blocking ? cudaEventBlockingSync : cudaEventDefault));
  start_ = a;
  stop_ = b;
}

EventTimer::~EventTimer() {
  if (start_) cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  if (stop_) cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}

void EventTimer::start() {
  LB_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(start_), 0));
}

double EventTimer::stop() {
  LB_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(stop_), 0));
  LB_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)));
  LB_CUDA_CHECK(cudaGetLastError());  // a kernel launched in between may have failed
  float ms = 0;
  LB_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_)));
  return ms * 1e-3;
}

void flush_l2() {
  static DeviceBuffer buffer(2 * std::max<size_t>(device_facts().l2_bytes, 1 << 20));
  static unsigned char value = 0;
  LB_CUDA_CHECK(cudaMemsetAsync(buffer.get(), ++value, buffer.bytes(), 0));
}

double copy_bandwidth(size_t bytes) {
  DeviceBuffer a(bytes), b(bytes);
  LB_CUDA_CHECK(cudaMemset(a.get(), 1, bytes));
  EventTimer timer(false);
  double best = 1e30;
  for (int i = 0; i < 12; ++i) {
    timer.start();
    LB_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, 0));
    const double t = timer.stop();
    if (i >= 2) best = std::min(best, t);
  }
  return 2.0 * double(bytes) / best;
}

void synchronize() {
  LB_CUDA_CHECK(cudaDeviceSynchronize());
}

bool GpuUtilSampler::available() {
  return nvml().ok;
}

void GpuUtilSampler::start() {
  stop();
  average_ = peak_ = -1;
  sum_ = 0;
  samples_ = 0;
  if (!available()) return;
  running_ = true;
  thread_ = std::thread([this] {
    while (running_) {
      NvmlUtilization u{};
      if (nvml().get_utilization(nvml().device, &u) == 0) {
        sum_ += u.gpu;
        ++samples_;
        peak_ = std::max(peak_, double(u.gpu));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
}

void GpuUtilSampler::stop() {
  if (!running_) return;
  running_ = false;
  thread_.join();
  if (samples_) average_ = sum_ / samples_;
}

std::vector<std::pair<std::string, std::string>> gpu_context() {
  std::vector<std::pair<std::string, std::string>> c;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  c.emplace_back("layerbench_cuda_version",
                 "runtime " + version(runtime) + ", driver API " + version(driver));
  const size_t lt = cublasLtGetVersion();
  c.emplace_back(
      "layerbench_cublas_version",
      std::to_string(lt / 10000) + "." + std::to_string(lt / 100 % 100) + "." + std::to_string(lt % 100));
  const size_t dnn = cudnnGetVersion();
  c.emplace_back(
      "layerbench_cudnn_version",
      std::to_string(dnn / 10000) + "." + std::to_string(dnn / 100 % 100) + "." + std::to_string(dnn % 100));
  if (!why_no_gpu().empty()) {
    c.emplace_back("layerbench_gpu_model", "none (" + why_no_gpu() + ")");
    return c;
  }
  const DeviceFacts& f = device_facts();
  c.emplace_back("layerbench_gpu_model", f.name + " (sm_" + std::to_string(f.major) +
                                             std::to_string(f.minor) + ", " + std::to_string(f.sm_count) +
                                             " SMs, " + std::to_string(f.memory_bytes >> 20) + " MiB, L2 " +
                                             std::to_string(f.l2_bytes >> 20) + " MiB)");
  if (nvml().ok) {
    char buf[96] = {};
    if (nvml().driver_version && nvml().driver_version(buf, sizeof buf) == 0)
      c.emplace_back("layerbench_gpu_driver", buf);
    unsigned int sm = 0, mem = 0;
    if (nvml().get_clock && nvml().get_clock(nvml().device, 1, &sm) == 0 &&  // NVML_CLOCK_SM
        nvml().get_clock(nvml().device, 2, &mem) == 0)                       // NVML_CLOCK_MEM
      c.emplace_back("layerbench_gpu_clocks",
                     "SM " + std::to_string(sm) + " MHz, memory " + std::to_string(mem) + " MHz (at start)");
  } else {
    c.emplace_back("layerbench_gpu_driver", "unknown (NVML not found)");
  }
  return c;
}

}  // namespace lb::cuda
