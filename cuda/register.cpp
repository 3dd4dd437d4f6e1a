// The GPU backends' registration functions (DESIGN.md: one explicit function per backend).
#include "kernels/registry.h"

namespace lb {
namespace cuda {
void register_cublas(Registry& r);
void register_cudnn_conv2d(Registry& r);
void register_cudnn_lstm(Registry& r);
}  // namespace cuda

void register_cublas(Registry& r) { cuda::register_cublas(r); }

void register_cudnn(Registry& r) {
  cuda::register_cudnn_conv2d(r);
  cuda::register_cudnn_lstm(r);
}

}  // namespace lb
