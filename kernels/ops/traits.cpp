#include "kernels/ops/traits.h"

namespace lb {

const OpTraits& traits(Op op) {
  switch (op) {
    case Op::dense:
      return dense_traits();
    case Op::conv2d:
      return conv2d_traits();
    case Op::lstm:
      return lstm_traits();
  }
  throw Error("op " + std::to_string(int(op)) + ": not an op");
}

}  // namespace lb
