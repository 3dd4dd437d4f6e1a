// Every CPU kernel of the registry, whatever its backend, on the conformance suite
// (bench/suites/conformance.txt) in f32, bf16 and i8, on one thread and, for a kernel that
// takes more, on two: it declines with a one-line reason under its backend's name, or it
// matches the reference (check_conforms(), conformance.h). The same in the training passes the
// kernel computes (KernelInfo::passes: fwd_train, bwd, train), in f32 and bf16 (not for the ref
// backend itself). One test per kernel,
// so that ctest runs them side by side and a failure names its kernel. What a backend must cover (which
// dtypes, which shapes) is its own test's business: cpu_test, onednn_test, eigen_test.
#include "kernels/tests/conformance.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/data.h"

namespace lb {
namespace {

std::vector<std::string> cpu_kernel_ids() {
  std::vector<std::string> ids;
  for (const KernelEntry& k : registry().kernels())
    if (k.info.device == Device::cpu) ids.push_back(k.info.id);
  return ids;
}

// Under the sanitizers (the test command's second stage) a multithreaded kernel's training
// passes run on two threads only: the split that one thread skips is where memory errors
// hide, and the stage's time is short.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, DeclinesOrMatchesTheReference) {
  const KernelEntry& k = *registry().find(GetParam());
  for (Problem p : load_suite("conformance")) {
    if (name(p.op()) != k.op_name()) continue;
    for (DType dt : {DType::f32, DType::bf16, DType::i8}) {
      p.dt = dt;
      for (int threads : {1, 2})
        if (threads == 1 || k.info.multithreaded) check_conforms(k, p, Context{threads});
    }
    // The reference's own backward is checked against its forward's central differences
    // (backward_test.cpp); against itself here it would prove nothing and cost the most.
    // bwd_d and bwd_w are left out: bwd runs both their codes (and is verified output by
    // output), train the forward and the backward with the forward's own mask.
    for (Pass pass : k.info.passes) {
      if (pass == Pass::fwd || pass == Pass::bwd_d || pass == Pass::bwd_w || k.backend() == "ref") continue;
      for (DType dt : {DType::f32, DType::bf16}) {
        Problem q = with_pass(p, pass);
        q.dt = dt;
        for (int threads : {1, 2})
          if (threads == 2 ? k.info.multithreaded : !(kSanitized && k.info.multithreaded))
            check_conforms(k, q, Context{threads});
      }
    }
  }
}

// Test names from the ids: dense.cpu.default ->
// Registry/Conformance.DeclinesOrMatchesTheReference/dense_cpu_default.
INSTANTIATE_TEST_SUITE_P(Registry, Conformance, ::testing::ValuesIn(cpu_kernel_ids()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string id = info.param;
                           std::replace(id.begin(), id.end(), '.', '_');
                           return id;
                         });

}  // namespace
}  // namespace lb
