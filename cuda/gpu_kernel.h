// The shared part of every GPU kernel: device copies of the host tensors, and the ReLU pass
// of relu=inplace/separate. prepare() uploads every argument, outputs included (the harness
// poisons them first, so an output element the kernel never writes still holds the poison
// when it comes back); finish() waits and downloads the outputs. run() of a subclass only
// launches. An argument bound to shared device memory (bind(), a graph's arena) is neither
// copied up nor down: dev() is that memory.
#pragma once

#include <array>

#include "cuda/memory.h"
#include "kernels/kernel.h"

namespace lb::cuda {

class GpuKernel : public Kernel {
 public:
  // Empty when a GPU is usable and sm >= min_sm (e.g. 89 for fp8), else why not.
  static std::string gpu_unusable(int min_sm = 0);

  void finish(TensorSet& ts) override;
  void release() override;
  bool bind(Arg a, void* device_data) override {
    bound_[int(a)] = device_data;
    return true;
  }
  size_t scratch_bytes() const override { return workspace_.bytes() + extra_bytes_; }

 protected:
  // Allocates and uploads a device copy of every argument of p.
  void upload(const Problem& p, const TensorSet& ts);
  void* dev(Arg a) const { return bound_[int(a)] ? bound_[int(a)] : devices_[int(a)].get(); }
  // The element-wise pass after the layer, as the modes are defined (problem.h):
  // relu=inplace dst := max(dst, 0), relu=separate relu_dst := max(dst, 0); nothing for
  // none and fused (the kernel's epilogue). Launches on the default stream, asynchronous.
  void relu_pass() const;
  // The ReLU's backward in front of a backward pass (kernels/ops/traits.h, pass_args), as
  // the modes are defined: separate diff_dst := diff_relu_dst where relu_dst > 0, else 0;
  // inplace the same over diff_dst from dst; nothing for none (fused: the kernel's).
  // Launches on the default stream, asynchronous; diff_dst then holds dz.
  void relu_backward_pass() const;

  Problem problem_;
  std::array<DeviceBuffer, kNumArgs> devices_;
  std::array<void*, kNumArgs> bound_{};  // bind()'s, in place of devices_ (not ours)
  DeviceBuffer workspace_;               // the library's workspace, sized in prepare()
  size_t extra_bytes_ = 0;               // other device memory a subclass holds (converted bias, ...)

 private:
  int64_t dst_elements_ = 0;
};

}  // namespace lb::cuda
