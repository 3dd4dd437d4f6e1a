// The onednn backend's registration function: one line per kernel lives next to each kernel.
#include "kernels/registry.h"

namespace lb {
namespace onednn {
void register_dense(Registry& r);
void register_conv2d(Registry& r);
void register_lstm(Registry& r);
}  // namespace onednn

void register_onednn(Registry& r) {
  onednn::register_dense(r);
  onednn::register_conv2d(r);
  onednn::register_lstm(r);
}

}  // namespace lb
