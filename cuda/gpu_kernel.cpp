#include "cuda/gpu_kernel.h"

#include "cuda/check.h"
#include "cuda/elementwise.h"
#include "cuda/runtime.h"

namespace lb::cuda {

std::string GpuKernel::gpu_unusable(int min_sm) {
  if (!why_no_gpu().empty()) return why_no_gpu();
  const DeviceFacts& f = device_facts();
  if (f.major * 10 + f.minor < min_sm)
    return "needs sm_" + std::to_string(min_sm) + " or newer; this GPU is sm_" + std::to_string(f.major) +
           std::to_string(f.minor);
  return {};
}

void GpuKernel::upload(const Problem& p, const TensorSet& ts) {
  problem_ = p;
  // The output's elements (dy's in a backward pass, where dst may not be an argument).
  dst_elements_ = ts.has(Arg::dst) ? ts.at(Arg::dst).elements() : ts.at(Arg::diff_dst).elements();
  for (int i = 0; i < kNumArgs; ++i) {
    const Arg a = Arg(i);
    if (!ts.has(a) || bound_[i]) {
      devices_[i] = DeviceBuffer();
      continue;
    }
    const Tensor& t = ts.at(a);
    devices_[i] = DeviceBuffer(t.bytes());
    LB_CUDA_CHECK(cudaMemcpy(devices_[i].get(), t.data(), t.bytes(), cudaMemcpyHostToDevice));
  }
}

void GpuKernel::relu_pass() const {
  if (problem_.relu != Relu::inplace && problem_.relu != Relu::separate) return;
  const Arg out = problem_.relu == Relu::inplace ? Arg::dst : Arg::relu_dst;
  relu(dev(Arg::dst), dev(out), dst_elements_, storage_of(problem_.dt, Arg::dst));
}

void GpuKernel::relu_backward_pass() const {
  if (problem_.relu != Relu::inplace && problem_.relu != Relu::separate) return;
  const bool separate = problem_.relu == Relu::separate;
  relu_backward(dev(separate ? Arg::relu_dst : Arg::dst), dev(separate ? Arg::diff_relu_dst : Arg::diff_dst),
                dev(Arg::diff_dst), dst_elements_, storage_of(problem_.dt, Arg::diff_dst));
}

void GpuKernel::finish(TensorSet& ts) {
  LB_CUDA_CHECK(cudaDeviceSynchronize());
  for (Arg a : output_args(problem_)) {
    if (bound_[int(a)]) continue;  // shared: whoever bound it reads it there
    Tensor& t = ts.at(a);
    LB_CUDA_CHECK(cudaMemcpy(t.data(), dev(a), t.bytes(), cudaMemcpyDeviceToHost));
  }
}

void GpuKernel::release() {
  for (auto& d : devices_)
    d = DeviceBuffer();
  bound_.fill(nullptr);
  workspace_ = DeviceBuffer();
  extra_bytes_ = 0;
}

}  // namespace lb::cuda
