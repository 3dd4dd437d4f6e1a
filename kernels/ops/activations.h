// The shape of the ops on activations as they come (add, softmax): one per op file
// derives from it, so that each op keeps its own type in Problem's variant.
#pragma once

#include <cstdint>

namespace lb {

// MB×IC×IH×IW: a vector per sample is IH = IW = 1; a sequence's positions are rows of the
// batch (MB = T·batch), as dense takes them.
struct Activations {
  int64_t mb = 1, ic = 1, ih = 1, iw = 1;
  int64_t elements() const { return mb * ic * ih * iw; }
  bool operator==(const Activations&) const = default;
};

}  // namespace lb
