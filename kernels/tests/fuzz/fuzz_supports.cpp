// libFuzzer target: one problem line (lb::parse_problem) through every registered
// kernel's supports() and the model. A line the parser takes is a problem a sweep may
// hand to any kernel, so each supports() must answer — yes, or a reason — without a
// signal, undefined behaviour or an exception: `conv2d mb=2147483647 ic=16 ih=8 iw=8
// oc=16 kh=3 kw=3 ph=1 dt=i8` once stopped conv2d.onednn.default with SIGFPE (its seed
// is corpus/supports/regress-onednn-sigfpe.txt). Built with the backends this machine has
// (ref always, oneDNN where found: kernels/tests/fuzz/CMakeLists.txt says why not the others).
#include <cstdint>

#include "kernels/model.h"
#include "kernels/ops/traits.h"
#include "kernels/problem.h"
#include "kernels/registry.h"
#include "kernels/tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lb;
  const auto p = fuzz::accepted("", [&] { return parse_problem(fuzz::as_text(data, size)); });
  if (!p) return 0;
  fuzz::must_not_throw("the model", [&] {
    model(*p);
    largest_arg(*p);
  });
  for (const KernelEntry& k : registry().kernels())
    fuzz::must_not_throw(k.info.id + ".supports()", [&] { k.supports(*p); });
  return 0;
}
