// The cpu backend's registration function: one line per kernel lives next to each kernel.
#include "kernels/registry.h"

namespace lb {
namespace cpu {
void register_dense_naive(Registry& r);
void register_dense_blocked(Registry& r);
void register_dense(Registry& r);
void register_conv2d(Registry& r);
void register_conv2d_depthwise(Registry& r);
void register_lstm(Registry& r);
}  // namespace cpu

void register_cpu(Registry& r) {
  cpu::register_dense_naive(r);
  cpu::register_dense_blocked(r);
  cpu::register_dense(r);
  cpu::register_conv2d(r);
  cpu::register_conv2d_depthwise(r);
  cpu::register_lstm(r);
}

}  // namespace lb
