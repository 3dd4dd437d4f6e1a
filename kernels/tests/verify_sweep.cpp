// The long sweep of verification (ctest -L long; scripts/test.sh leaves it out): random
// tiny shapes — where cancellation and edge cases are most common relative to the work —
// × seeds × dtypes f32, bf16, i8, every CPU kernel that supports them, plus one planted
// wrong kernel (the reference without its bias) on every instance. It asserts that no
// correct kernel fails and that the planted one never passes in f32 (it fails, or is
// mistrusted where ReLU clips every output), and prints the counts.
//
// LB_SWEEP_SHAPES and LB_SWEEP_SEEDS scale it (default 300 shapes × 40 seeds, minutes).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernels/case_session.h"
#include "kernels/common.h"
#include "kernels/verify.h"

namespace lb {
namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// Random tiny problem lines without the dtype: 2 dense : 2 conv2d : 1 lstm. Every key
// small, so that a few products make each output and cancellation is frequent.
std::vector<std::string> tiny_shapes(int count) {
  std::mt19937_64 rng(20240515);
  auto pick = [&rng](int lo, int hi) { return int(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  const char* relus[] = {"none", "separate", "inplace", "fused"};
  std::vector<std::string> lines;
  while (int(lines.size()) < count) {
    const int kind = int(lines.size()) % 5;
    std::string line;
    if (kind < 2) {
      line = "dense mb=" + std::to_string(pick(1, 5)) + " ic=" + std::to_string(pick(1, 9)) +
             " oc=" + std::to_string(pick(1, 9));
    } else if (kind < 4) {
      const bool depthwise = pick(0, 3) == 0;
      const int g = depthwise ? pick(1, 4) : pick(1, 3);
      const int ic = depthwise ? g : g * pick(1, 3), oc = depthwise ? g : g * pick(1, 3);
      const int kh = pick(1, 3), kw = pick(1, 3), dh = pick(1, 2), dw = pick(1, 2);
      const int ph = pick(0, kh - 1), pw = pick(0, kw - 1);
      const int ih = pick(1, 6), iw = pick(1, 6);
      if (ih + 2 * ph < dh * (kh - 1) + 1 || iw + 2 * pw < dw * (kw - 1) + 1) continue;  // no output
      line = "conv2d mb=" + std::to_string(pick(1, 2)) + " ic=" + std::to_string(ic) +
             " ih=" + std::to_string(ih) + " iw=" + std::to_string(iw) + " oc=" + std::to_string(oc) +
             " kh=" + std::to_string(kh) + " kw=" + std::to_string(kw) + " sh=" + std::to_string(pick(1, 3)) +
             " sw=" + std::to_string(pick(1, 3)) + " ph=" + std::to_string(ph) + " pw=" + std::to_string(pw) +
             " dh=" + std::to_string(dh) + " dw=" + std::to_string(dw) + " g=" + std::to_string(g);
    } else {
      line = "lstm mb=" + std::to_string(pick(1, 3)) + " t=" + std::to_string(pick(1, 4)) +
             " ic=" + std::to_string(pick(1, 5)) + " hc=" + std::to_string(pick(1, 5)) +
             " l=" + std::to_string(pick(1, 2));
    }
    line += std::string(" relu=") + relus[pick(0, 3)];
    try {
      parse_problem(line);  // the generator's ranges are meant to be valid; skip any that is not
    } catch (const Error&) {
      continue;
    }
    lines.push_back(line);
  }
  return lines;
}

// The reference with its bias left out: a real bug, as small as the bias, on every output.
class NoBias final : public Kernel {
 public:
  explicit NoBias(Op op) : ref_(oracle(op).make()) {}
  std::string supports(const Problem& p) const override { return ref_->supports(p); }
  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override { ref_->prepare(p, ts, ctx); }
  void run(TensorSet& ts) override {
    Tensor& bias = ts.at(Arg::bias);
    const Tensor saved = bias.clone();
    for (int64_t i = 0; i < bias.elements(); ++i)
      bias.store(i, 0.0);
    ref_->run(ts);
    std::memcpy(bias.data(), saved.data(), bias.bytes());  // inputs must come back untouched
  }

 private:
  std::unique_ptr<Kernel> ref_;
};

TEST(VerifySweep, TinyShapesPassEveryCpuKernelAndPlantedBugsFail) {
  const int shapes = env_int("LB_SWEEP_SHAPES", 300), seeds = env_int("LB_SWEEP_SEEDS", 40);
  struct Count {
    int64_t checks = 0, failed = 0, mistrusted = 0;
  };
  std::map<std::string, Count> per_kernel;
  int64_t planted = 0, caught = 0, unseen = 0, below_resolution = 0;
  std::vector<std::string> failures;
  for (const std::string& shape : tiny_shapes(shapes))
    for (const char* dt : {"f32", "bf16", "i8"}) {
      const Problem p = parse_problem(shape + " dt=" + dt);
      const KernelEntry no_bias{{std::string(name(p.op())) + ".planted.no_bias", Device::cpu, "", "f64"},
                                [op = p.op()] { return std::make_unique<NoBias>(op); }};
      for (int seed = 1; seed <= seeds; ++seed) {
        for (const KernelEntry& k : registry().kernels()) {
          if (k.info.device != Device::cpu || k.op_name() != name(p.op()) || !k.supports(p).empty()) continue;
          const Verdict v = check_kernel(k, p, uint64_t(seed));
          Count& c = per_kernel[k.info.id];
          ++c.checks;
          c.failed += v.status == Status::failed;
          c.mistrusted += v.status == Status::mistrusted;
          if (v.status == Status::failed) failures.push_back(v.repro + "\n    " + v.reason);
        }
        if (no_bias.supports(p).empty()) {
          // Caught: failed. Mistrusted is allowed: where ReLU clips every output of both
          // the planted kernel and the reference, their outputs are equal and all zero.
          const Verdict v = check_kernel(no_bias, p, uint64_t(seed));
          ++planted;
          caught += v.status == Status::failed;
          unseen += v.status == Status::mistrusted;
          // A pass is allowed only where the bias moved no output by more than a narrow
          // storage resolves (bf16 keeps 8 bits); in f32 it is a miss.
          below_resolution += v.status == Status::passed;
          if (v.status == Status::passed && p.dt == DType::f32)
            ADD_FAILURE() << "planted bug passed: " << v.repro << "\n" << v.reason;
        }
      }
    }
  int64_t checks = 0;
  for (const auto& [id, c] : per_kernel) {
    std::printf("%-32s %7lld checks %5lld failed %6lld mistrusted\n", id.c_str(), (long long)c.checks,
                (long long)c.failed, (long long)c.mistrusted);
    checks += c.checks;
  }
  std::printf(
      "%d shapes × 3 dtypes × %d seeds: %lld checks, %zu failed; planted bias bug caught %lld of %lld "
      "(%lld mistrusted: every output clipped; %lld passed below a narrow storage's resolution)\n",
      shapes, seeds, (long long)checks, failures.size(), (long long)caught, (long long)planted,
      (long long)unseen, (long long)below_resolution);
  for (size_t i = 0; i < failures.size() && i < 20; ++i)
    std::printf("  %s\n", failures[i].c_str());
  EXPECT_TRUE(failures.empty());
  EXPECT_EQ(caught + unseen + below_resolution, planted);
  EXPECT_GT(caught, planted * 9 / 10);
}

}  // namespace
}  // namespace lb
