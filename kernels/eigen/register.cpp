// The eigen backend's registration function: one line per kernel lives next to each kernel.
#include "kernels/registry.h"

namespace lb {
namespace eigen {
void register_dense(Registry& r);
void register_conv2d(Registry& r);
void register_conv2d_depthwise(Registry& r);
void register_lstm(Registry& r);
}  // namespace eigen

void register_eigen(Registry& r) {
  eigen::register_dense(r);
  eigen::register_conv2d(r);
  eigen::register_conv2d_depthwise(r);
  eigen::register_lstm(r);
}

}  // namespace lb
