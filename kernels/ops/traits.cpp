#include "kernels/ops/traits.h"

#include <cmath>
#include <cstdio>

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

LargestArg largest_arg(const Problem& p) {
  const OpTraits& t = traits(p.op());
  LargestArg largest{t.output.arg, 0};
  auto consider = [&](const ArgSpec& a) {
    long double elements = 1;
    for (int64_t d : a.dims(p))
      elements *= d;
    if (elements > largest.elements) largest = {a.arg, elements};
  };
  for (const ArgSpec& a : t.inputs)
    consider(a);
  consider(t.output);
  return largest;
}

std::string power_of_two(long double n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "2^%.1Lf", std::log2(n));
  return buf;
}

}  // namespace lb
