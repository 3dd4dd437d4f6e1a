// libFuzzer target: a suite file (lb::parse_suite). Comments, blank lines, CR-LF line
// ends and line numbers are what it adds to the problem parser; every error cites
// fuzz.txt:LINE, and every problem it returns round-trips through print().
#include <cstdint>

#include "kernels/data.h"
#include "kernels/tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lb;
  const auto suite =
      fuzz::accepted("fuzz.txt:", [&] { return parse_suite(fuzz::as_text(data, size), "fuzz.txt"); });
  if (!suite) return 0;
  fuzz::must_not_throw("the round trip", [&] {
    for (const Problem& p : *suite) {
      const std::string line = print(p);
      if (parse_problem(line) != p) fuzz::finding("parse_problem(print(p)) != p for '" + line + "'");
    }
  });
  return 0;
}
