// The GPU's DeviceRuntime (kernels/device.h): CUDA-event timing, device memory around
// a case (our tracking allocator and the driver's view), NVML utilisation, the L2
// flush for cold cases, the GPU's peaks and its context entries. The harness reaches
// all of it through device_runtime(Device::gpu) and never names CUDA.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "cuda/check.h"
#include "cuda/memory.h"
#include "cuda/runtime.h"
#include "kernels/case_session.h"
#include "kernels/device.h"

namespace lb {
namespace {

class GpuTimer final : public Timer {
 public:
  explicit GpuTimer(bool blocking) : events_(blocking) {}
  void start() override { events_.start(); }
  double stop() override { return events_.stop(); }  // waits, spinning or blocking

 private:
  cuda::EventTimer events_;
};

size_t above(size_t value, size_t base) {
  return value > base ? value - base : 0;
}

constexpr double kNvmlWindowSeconds = 1.0;

class GpuProbe final : public DeviceProbe {
 public:
  void before_prepare() override {
    cuda::synchronize();
    device_base_ = cuda::device_bytes_in_use();
    cuda::reset_device_peak();
    driver_base_ = cuda::driver_used_bytes();
  }
  void after_setup() override {
    device_setup_peak_ = cuda::device_bytes_peak();
    driver_setup_ = cuda::driver_used_bytes();
  }
  void begin_timed() override {
    cuda::reset_device_peak();
    util_.start();
  }
  void end_timed(double busy, double wall, Counters& out) override {
    util_.stop();
    const size_t device_peak = std::max(device_setup_peak_, cuda::device_bytes_peak());
    const size_t driver_now = std::max(driver_setup_, cuda::driver_used_bytes());
    out["lb_device_peak_bytes"] = double(above(device_peak, device_base_));
    out["lb_device_driver_bytes"] = double(above(driver_now, driver_base_));
    // NVML's utilisation is the share of its last sample period (1/6 s to 1 s, by GPU)
    // in which a kernel ran: over a shorter loop it mostly describes what came before.
    // Reported only for loops of at least kNvmlWindowSeconds; lb_gpu_busy_pct, from the
    // events, is there for every case.
    if (util_.average() >= 0 && wall >= kNvmlWindowSeconds) {
      out["lb_gpu_util_avg"] = util_.average();
      out["lb_gpu_util_peak"] = util_.peak();
    }
    out["lb_gpu_busy_pct"] = wall > 0 ? 100.0 * busy / wall : 0;
  }

 private:
  size_t device_base_ = 0, device_setup_peak_ = 0, driver_base_ = 0, driver_setup_ = 0;
  cuda::GpuUtilSampler util_;
};

// The GPU's GEMM ceiling for one dtype: cuBLASLt at 8192^3, best of 10 timed products
// after 3 warm-ups, through the same CaseSession every case uses.
DevicePeak gemm_peak(const KernelEntry& gemm, const Problem& p) {
  const DType dt = p.dt;
  CaseSession s(gemm, p);
  s.allocate(7);
  s.prepare();
  GpuTimer timer(false);
  double best = 1e30;
  for (int i = 0; i < 13; ++i) {
    timer.start();
    s.run();
    const double t = timer.stop();
    if (i >= 3) best = std::min(best, t);
  }
  const std::string how =
      "cuBLASLt 8192^3 " + std::string(name(dt)) + ", best of 10, " + s.kernel().details();
  return {"gpu_" + std::string(name(dt)) + "_gemm", 2.0 * 8192.0 * 8192.0 * 8192.0 / best, how};
}

class GpuRuntime final : public DeviceRuntime {
 public:
  std::string why_unavailable() const override { return cuda::why_no_gpu(); }

  // The device holds a copy of every tensor, plus workspaces we cannot know yet.
  std::string check_fits(double bytes) const override {
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess || bytes <= double(free)) return {};
    return "out of memory: needs " + gib(bytes) + " GiB of device memory, " + gib(double(free)) + " GiB free";
  }

  std::unique_ptr<Timer> timer(bool blocking) const override { return std::make_unique<GpuTimer>(blocking); }
  void flush_caches() const override { cuda::flush_l2(); }  // queued before the start event
  bool cold_by_copies() const override { return false; }
  std::unique_ptr<DeviceProbe> probe() const override { return std::make_unique<GpuProbe>(); }

  std::vector<DevicePeak> measure_peaks() const override {
    std::vector<DevicePeak> out;
    Registry cublas;  // the vendor GEMM alone: this library sits below registry()
    register_cublas(cublas);
    const KernelEntry* gemm = cublas.find("dense.cublas.lt");
    for (DType dt : {DType::f32, DType::tf32, DType::f16, DType::bf16, DType::f8}) {
      Problem p = parse_problem("dense mb=8192 ic=8192 oc=8192");
      p.dt = dt;
      if (!gemm || !gemm->supports(p).empty()) continue;
      try {
        out.push_back(gemm_peak(*gemm, p));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "layerbench: GPU peak for %s not measured: %s\n", std::string(name(dt)).c_str(),
                     e.what());
      }
    }
    try {
      out.push_back({"gpu_d2d_copy", cuda::copy_bandwidth(size_t(2) << 30),
                     "cudaMemcpy device to device, 2 GiB, bytes read + written, best of 10"});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "layerbench: GPU copy bandwidth not measured: %s\n", e.what());
    }
    return out;
  }

  std::string why_broken() const override { return cuda::sticky_error(); }

  std::shared_ptr<std::byte> device_memory(size_t bytes) const override {
    auto* buffer = new cuda::DeviceBuffer(bytes);  // tracked as every buffer of ours is
    return std::shared_ptr<std::byte>(buffer->as<std::byte>(), [buffer](std::byte*) { delete buffer; });
  }
  void to_device(void* device, const void* host, size_t bytes) const override {
    LB_CUDA_CHECK(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  }
  void to_host(void* host, const void* device, size_t bytes) const override {
    LB_CUDA_CHECK(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
  }
  void synchronize() const override { LB_CUDA_CHECK(cudaDeviceSynchronize()); }

  std::vector<std::pair<std::string, std::string>> context() const override {
    auto c = cuda::gpu_context();
    c.emplace_back("layerbench_gpu_timing", cuda::gpu_timing_method());
    c.emplace_back(
        "layerbench_gpu_util_method",
        "NVML utilisation sampled every 20 ms over the timed loop, reported only for loops of at least " +
            std::to_string(int(kNvmlWindowSeconds)) +
            " s (NVML averages over its own 1/6-1 s period); lb_gpu_busy_pct: event time / wall time");
    return c;
  }
};

}  // namespace

const DeviceRuntime& cuda_runtime() {
  static const GpuRuntime r;
  return r;
}

}  // namespace lb
