#include "cuda/runtime.h"

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "cuda/check.h"
#include "cuda/cublas/library.h"
#include "cuda/hold.h"
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
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned int*) = nullptr;  // mW
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
    n.max_clock = reinterpret_cast<decltype(n.max_clock)>(dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
    n.power_limit = reinterpret_cast<decltype(n.power_limit)>(dlsym(lib, "nvmlDeviceGetEnforcedPowerLimit"));
    if (!init || !by_index || !n.get_utilization || init() != 0 || by_index(0, &n.device) != 0) return n;
    n.ok = true;
    return n;
  }();
  return n;
}

// The file a function was loaded from, resolved ("" where unknown): which copy of a shared
// library ran — the toolkit's, the driver's or a Python package's. Looked up by name, so
// that the address is the library's and not a stub in our binary.
std::string library_file(const char* function) {
  Dl_info info{};
  void* address = dlsym(RTLD_DEFAULT, function);
  if (!address || !dladdr(address, &info) || !info.dli_fname) return {};
  char resolved[4096];
  return realpath(info.dli_fname, resolved) ? resolved : info.dli_fname;
}

}  // namespace

std::string dotted_version(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

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

bool EventTimer::hold_wanted() {
  const char* v = std::getenv("LAYERBENCH_GPU_HOLD");
  return !v || std::string(v) != "0";
}

EventTimer::EventTimer(bool blocking, bool hold) {
  cudaEvent_t a = nullptr, b = nullptr;
  LB_CUDA_CHECK(cudaEventCreate(&a));
  LB_CUDA_CHECK(cudaEventCreateWithFlags(&b, blocking ? cudaEventBlockingSync : cudaEventDefault));
  start_ = a;
  stop_ = b;
  if (hold) {
    void* host = nullptr;
    void* device = nullptr;
    LB_CUDA_CHECK(cudaHostAlloc(&host, 2 * sizeof(int), cudaHostAllocMapped));
    flags_ = static_cast<int*>(host);
    LB_CUDA_CHECK(cudaHostGetDevicePointer(&device, host, 0));
    device_flags_ = static_cast<int*>(device);
  }
}

EventTimer::~EventTimer() {
  if (holding_) {  // a start() without stop(): let the wait end before the flags go
    reinterpret_cast<volatile int*>(flags_)[0] = 1;
    cudaDeviceSynchronize();
  }
  if (start_) cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  if (stop_) cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
  if (flags_) cudaFreeHost(flags_);
}

void EventTimer::start() {
  if (device_flags_) {
    volatile int* f = flags_;
    f[0] = 0;
    f[1] = 0;
    queue_hold(device_flags_, device_flags_ + 1, kHoldTimeoutNs);
    holding_ = true;
  }
  LB_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(start_), 0));
}

double EventTimer::stop() {
  if (holding_) {  // everything is queued: the device may start
    std::atomic_thread_fence(std::memory_order_seq_cst);
    reinterpret_cast<volatile int*>(flags_)[0] = 1;
    holding_ = false;
  }
  LB_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(stop_), 0));
  LB_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)));
  LB_CUDA_CHECK(cudaGetLastError());  // a kernel launched in between may have failed
  float ms = 0;
  LB_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_)));
  if (device_flags_ && reinterpret_cast<volatile int*>(flags_)[1]) {
    std::fprintf(stderr,
                 "layerbench: the device-side hold before a timed run ended by its %.0f ms timeout (the run "
                 "waits for the device inside); this case is timed without it\n",
                 kHoldTimeoutNs * 1e-6);
    device_flags_ = nullptr;  // the flags stay until the destructor: no freeing inside the timed loop
  }
  return ms * 1e-3;
}

std::string gpu_timing_method() {
  if (!EventTimer::hold_wanted())
    return "CUDA events around each run(), recorded as the host reaches them "
           "(LAYERBENCH_GPU_HOLD=0: launch overhead included)";
  return "CUDA events around each run(), the start event held behind a device-side wait until the run "
         "is queued (launch overhead excluded; lb_host_wall_per_run_s has the host's view)";
}

std::string sticky_error() {
  if (!why_no_gpu().empty()) return {};
  cudaGetLastError();  // an error that leaves the context usable is cleared here
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    cudaGetLastError();
    e = cudaDeviceSynchronize();  // a sticky error comes back
  }
  return e == cudaSuccess ? std::string() : std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
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
  cudaDriverGetVersion(&driver);  // 0 where no driver is installed
  auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  c.emplace_back("layerbench_cuda_version", "runtime " + version(runtime) +
                                                " (linked statically), driver API " +
                                                (driver ? version(driver) : std::string("none (no driver)")));
  // cuBLASLt is opened only where a GPU can use it (cuda/cublas/library.h): without one,
  // the version of the headers built against and the library that would be looked for.
  if (!why_no_gpu().empty())
    c.emplace_back("layerbench_cublas_version", dotted_version(CUBLAS_VERSION) + " (built against; " +
                                                    cublaslt_soname() +
                                                    " not opened: no usable CUDA device)");
  else if (!why_no_cublaslt().empty())
    c.emplace_back("layerbench_cublas_version", "none (" + why_no_cublaslt() + ")");
  else
    c.emplace_back("layerbench_cublas_version",
                   dotted_version(cublaslt().cublasLtGetVersion()) + " (" + cublaslt().file + ")");
  // cuDNN: linked at build time, loaded from whichever copy the loader found here.
  auto with_file = [](std::string v, const char* function) {
    const std::string file = library_file(function);
    return file.empty() ? v : v + " (" + file + ")";
  };
  c.emplace_back("layerbench_cudnn_version", with_file(dotted_version(cudnnGetVersion()), "cudnnGetVersion"));
  if (!why_no_gpu().empty()) {
    c.emplace_back("layerbench_gpu_model", "none (" + why_no_gpu() + ")");
    c.emplace_back("layerbench_gpu_driver", driver ? "CUDA driver API " + version(driver) : "none");
    return c;
  }
  const DeviceFacts& f = device_facts();
  c.emplace_back("layerbench_gpu_model", f.name + " (sm_" + std::to_string(f.major) +
                                             std::to_string(f.minor) + ", " + std::to_string(f.sm_count) +
                                             " SMs, " + std::to_string(f.memory_bytes >> 20) + " MiB, L2 " +
                                             std::to_string(f.l2_bytes >> 20) + " MiB)");
  const Nvml& n = nvml();
  if (!n.ok) {
    c.emplace_back("layerbench_gpu_driver", "CUDA driver API " + version(driver) + " (NVML not found)");
    return c;
  }
  char buf[96] = {};
  c.emplace_back("layerbench_gpu_driver",
                 n.driver_version && n.driver_version(buf, sizeof buf) == 0
                     ? std::string(buf) + " (CUDA driver API " + version(driver) + ")"
                     : "CUDA driver API " + version(driver));
  // NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2.
  unsigned int sm = 0, mem = 0, sm_max = 0, mem_max = 0, power = 0;
  if (n.get_clock && n.get_clock(n.device, 1, &sm) == 0 && n.get_clock(n.device, 2, &mem) == 0) {
    std::string clocks =
        "SM " + std::to_string(sm) + " MHz, memory " + std::to_string(mem) + " MHz (at start)";
    if (n.max_clock && n.max_clock(n.device, 1, &sm_max) == 0 && n.max_clock(n.device, 2, &mem_max) == 0)
      clocks += "; max SM " + std::to_string(sm_max) + " MHz, memory " + std::to_string(mem_max) + " MHz";
    c.emplace_back("layerbench_gpu_clocks", clocks);
  }
  if (n.power_limit && n.power_limit(n.device, &power) == 0)
    c.emplace_back("layerbench_gpu_power_limit", std::to_string(power / 1000) + " W (enforced)");
  return c;
}

}  // namespace lb::cuda
