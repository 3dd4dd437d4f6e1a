// registry(): every backend built into this binary, in one explicit list (no
// self-registering statics: a static library's linker would drop them).
#include "kernels/device.h"
#include "kernels/registry.h"

namespace lb {

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    register_ref(reg);
#ifdef LB_HAVE_ONEDNN
    register_onednn(reg);
#endif
#ifdef LB_HAVE_EIGEN
    register_eigen(reg);
#endif
#ifdef LB_HAVE_CPU
    register_cpu(reg);
#endif
#ifdef LB_HAVE_CUDA
    register_cublas(reg);
    register_cudnn(reg);
    register_cuda(reg);
#endif
    return reg;
  }();
  return r;
}

}  // namespace lb

namespace lb {

const DeviceRuntime& device_runtime(Device d) {
  if (d == Device::cpu) return host_runtime();
#ifdef LB_HAVE_CUDA
  return cuda_runtime();
#else
  return no_gpu_runtime();
#endif
}

}  // namespace lb
