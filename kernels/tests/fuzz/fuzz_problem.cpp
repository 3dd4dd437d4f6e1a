// libFuzzer target: one problem line (lb::parse_problem). Whatever parses must print to
// a line that parses back to the same problem (the contract in problem.h), and its
// derived quantities — output dims, the analytic model, the short name — must be
// computable without undefined behaviour: they are what `layerbench analyze` prints.
#include <cstdint>

#include "kernels/model.h"
#include "kernels/problem.h"
#include "kernels/tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lb;
  // parse_problem's errors name the op or the token first: no common prefix.
  const auto p = fuzz::accepted("", [&] { return parse_problem(fuzz::as_text(data, size)); });
  if (!p) return 0;
  fuzz::must_not_throw("the round trip", [&] {
    const std::string line = print(*p);
    if (parse_problem(line) != *p) fuzz::finding("parse_problem(print(p)) != p for '" + line + "'");
    output_dims(*p);
    model(*p);
    short_name(*p);
  });
  return 0;
}
