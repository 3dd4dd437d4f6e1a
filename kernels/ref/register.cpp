// The ref backend's registration function: one line per op lives next to each kernel.
#include "kernels/registry.h"

namespace lb {
namespace ref {
void register_dense(Registry& r);
void register_conv2d(Registry& r);
void register_lstm(Registry& r);
}  // namespace ref

void register_ref(Registry& r) {
  ref::register_dense(r);
  ref::register_conv2d(r);
  ref::register_lstm(r);
}

}  // namespace lb
