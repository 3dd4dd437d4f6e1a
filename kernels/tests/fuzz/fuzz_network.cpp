// libFuzzer target: a network file (lb::parse_network), then the sums `layerbench
// analyze` prints (lb::totals) and the problems `check` and `run` take (lb::problems).
// Each input is parsed at batch 1 in f32, and at the largest batch parse_network takes
// (2^31 - 1, where shape arithmetic comes closest to overflowing int64) in a dtype
// picked by the input's size, so that every storage size is met too.
#include <cstdint>
#include <iterator>

#include "kernels/data.h"
#include "kernels/tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lb;
  const std::string_view text = fuzz::as_text(data, size);
  const DType big_dt = kAllDTypes[size % std::size(kAllDTypes)];
  struct Setting {
    int64_t batch;
    DType dt;
  };
  for (const Setting s : {Setting{1, DType::f32}, Setting{2147483647, big_dt}}) {
    const auto net =
        fuzz::accepted("fuzz.txt:", [&] { return parse_network(text, "fuzz.txt", s.batch, s.dt); });
    if (!net) continue;
    fuzz::must_not_throw("totals and problems", [&] {
      totals(*net);
      problems(*net);
    });
  }
  return 0;
}
