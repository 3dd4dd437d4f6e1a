// The one conformance check, shared by the CPU conformance test (conformance_test.cpp) and
// the GPU tests (cuda/tests/): a kernel either declines a problem with one line under its
// backend's name ("cpu: dt=i8 not supported (f32 only)") or computes it within tolerance
// of the reference (passed, or mistrusted where the reference output is mostly zeros).
// A failure prints the repro line.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "kernels/case_session.h"
#include "kernels/registry.h"
#include "kernels/verify.h"

namespace lb {

// Checks k on p as above, reporting through gtest; true when k computed p (whatever the
// verdict), false when it declined it.
inline bool check_conforms(const KernelEntry& k, const Problem& p, const Context& ctx = {},
                           uint64_t seed = 7) {
  const Verdict v = check_kernel(k, p, seed, ctx);
  const std::string where = k.info.id + " on " + print(p) + " threads=" + std::to_string(ctx.threads);
  if (v.status == Status::unsupported) {
    const std::string prefix = std::string(k.backend()) + ": ";
    EXPECT_EQ(v.reason.rfind(prefix, 0), 0u)
        << where << ": a reason must start with '" << prefix << "': " << v.reason;
    EXPECT_EQ(v.reason.find('\n'), std::string::npos) << where << ": a reason is one line: " << v.reason;
    return false;
  }
  EXPECT_TRUE(v.status == Status::passed || v.status == Status::mistrusted)
      << where << ": " << name(v.status) << ": " << v.reason << "\n  " << v.repro;
  return true;
}

// How many kernels of `backend` take p (supports() is empty): what a backend's own test
// requires of its coverage, while the conformance test verifies whatever is taken.
inline int kernels_taking(std::string_view backend, const Problem& p) {
  int n = 0;
  for (const KernelEntry& k : registry().kernels())
    n += k.backend() == backend && k.op_name() == name(p.op()) && k.supports(p).empty();
  return n;
}

}  // namespace lb
