// Whole networks run and verified (kernels/graph_session.h): the arena plan, check_graph on
// every CPU backend built, and kernels that a chain of layers exposes.
#include "kernels/graph_session.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "kernels/data.h"
#include "kernels/device.h"
#include "kernels/ops/traits.h"

namespace lb {
namespace {

// Every element-wise kind, a folded and an unfolded batchnorm, a branch, a sum and a concat.
constexpr const char* kBranchy = R"(input c=3 h=12 w=12
c1   conv2d oc=8 kh=3 kw=3 ph=1
bn1  batchnorm
r1   relu
a    conv2d oc=8 kh=1 kw=1
ar   relu6
b    conv2d in=r1 oc=8 kh=3 kw=3 ph=1
sum  add in=ar,b
cat  concat in=sum,r1
bn2  batchnorm
p    maxpool k=2
g    global_avgpool
f    flatten
fc   dense oc=10
prob softmax
)";

Graph branchy(int64_t batch, DType dt = DType::f32) {
  return parse_network(kBranchy, "branchy.txt", batch, dt);
}

TEST(GraphSession, ArenaHoldsTheLiveBuffersAndLittleMore) {
  for (const char* name : {"alexnet", "resnet50", "mobilenet_v2", "vgg16"}) {
    const Graph g = load_network(name, 4, DType::f32);
    const ArenaPlan plan = plan_arena(g);
    const double live = liveness(g, Pass::fwd).activations;
    EXPECT_GE(double(plan.arena_bytes), live) << name;
    EXPECT_LE(double(plan.arena_bytes), 1.25 * live) << name;
    std::printf("%s: arena %.1f MB, live buffers at the worst moment %.1f MB\n", name, plan.arena_bytes / 1e6,
                live / 1e6);
    for (size_t buf = 0; buf < plan.bytes.size(); ++buf)
      EXPECT_EQ(plan.offset[buf] % 64, 0u);
  }
}

TEST(GraphSession, EveryCpuBackendPassesABranchyGraph) {
  int checked = 0;
  for (const std::string& backend : registry().backends())
    for (DType dt : {DType::f32, DType::bf16}) {
      const GraphVerdict v = check_graph(branchy(3, dt), registry(), backend, 7);
      if (v.verdict.status == Status::unsupported) continue;  // a GPU backend, or Eigen's bf16
      EXPECT_EQ(v.verdict.status, Status::passed) << backend << " " << name(dt) << ": " << v.verdict.reason;
      // Views: flatten, the folded batchnorm, and the relu fused into c1 (every CPU backend
      // takes relu=fused on a forward conv); the relu6 fused into `a` where the backend's conv
      // takes relu=relu6 (the reference's, oneDNN's).
      const KernelEntry* a = pick_kernel(registry(), *branchy(3, dt).nodes[3].problem, backend, {}, nullptr);
      ASSERT_NE(a, nullptr) << backend;
      EXPECT_EQ(v.nodes_checked, a->info.relu6 ? 10 : 11) << backend;
      EXPECT_LE(v.output_difference, v.output_tolerance);
      ++checked;
    }
  EXPECT_GE(checked, 2);  // ref in f32 and bf16, at least
  const GraphVerdict apart =
      check_graph(branchy(3), registry(), "ref", 7, {}, {}, kDefaultReferenceMacs, false);
  EXPECT_EQ(apart.verdict.status, Status::passed) << apart.verdict.reason;
  EXPECT_EQ(apart.nodes_checked, 12);
}

TEST(GraphSession, FusesAReluOnlyWhereNothingElseReadsTheLayer) {
  // c1's output is read by its relu alone (through the folded batchnorm): fused. The relu
  // after `mid` is not in place, and `mid` is also read by `other`: neither fuses.
  const Graph g = parse_network(R"(input c=4 h=8 w=8
c1    conv2d oc=4 kh=3 kw=3 ph=1
bn1   batchnorm
r1    relu
mid   conv2d oc=4 kh=1 kw=1
r2    relu mode=separate
other conv2d in=mid oc=4 kh=1 kw=1
r3    relu
sum   add in=r2,r3
)",
                                "fuse.txt", 2, DType::f32);
  GraphSession s(g, registry(), "ref");
  ASSERT_EQ(s.unsupported(), "");
  EXPECT_EQ(s.graph().nodes[0].problem->relu, Relu::fused);
  EXPECT_EQ(s.graph().nodes[3].problem->relu, Relu::none);
  EXPECT_EQ(s.graph().nodes[5].problem->relu, Relu::fused);  // `other`, read by r3 alone
  s.allocate(5);
  s.prepare();
  EXPECT_EQ(s.run_verified().verdict.status, Status::passed);
}

// A dense kernel with a flaw that only a chain shows: it copies its input in prepare() and
// computes from that copy (as a GPU kernel that uploads in prepare() would), or it writes
// over its input.
enum class Flaw { stale_input, scribble_input };
class Flawed final : public Kernel {
 public:
  explicit Flawed(Flaw flaw) : flaw_(flaw), ref_(oracle(Op::dense).make()) {}
  std::string supports(const Problem&) const override { return ""; }
  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    for (Arg a : input_args(p))
      own_.set(a, ts.at(a).clone());
    Tensor& dst = ts.at(Arg::dst);
    own_.set(Arg::dst, Tensor::view(dst.storage(), dst.dims(), dst.data()));
    ref_->prepare(p, flaw_ == Flaw::stale_input ? own_ : ts, ctx);
  }
  void run(TensorSet& ts) override {
    ref_->run(flaw_ == Flaw::stale_input ? own_ : ts);
    if (flaw_ == Flaw::scribble_input) ts.at(Arg::src).store(0, 0.125);
  }

 private:
  Flaw flaw_;
  std::unique_ptr<Kernel> ref_;
  TensorSet own_;
};

TEST(GraphSession, AChainExposesStaleAndScribbledInputs) {
  for (Flaw flaw : {Flaw::stale_input, Flaw::scribble_input}) {
    Registry r;
    register_ref(r);
    r.add({.id = "dense.flawed.test", .idea = "ref with a flaw", .accumulation = "f64"},
          [flaw] { return std::make_unique<Flawed>(flaw); });
    for (const KernelEntry& k : r.kernels())
      ASSERT_TRUE(k.backend() != "flawed" || k.op_name() == "dense");
    // The flawed backend has only dense: its other layers come from --kernel's choice.
    std::vector<const KernelEntry*> chosen{r.find("conv2d.ref.naive"), r.find("pool2d.ref.naive"),
                                           r.find("add.ref.naive"), r.find("softmax.ref.naive")};
    for (const KernelEntry* k : chosen)
      ASSERT_NE(k, nullptr);
    const GraphVerdict v = check_graph(branchy(2), r, "flawed", 3, {}, chosen);
    EXPECT_EQ(v.verdict.status, Status::failed) << v.verdict.reason;
    EXPECT_NE(v.verdict.reason.find("fc (dense.flawed.test)"), std::string::npos) << v.verdict.reason;
    if (flaw == Flaw::scribble_input)
      EXPECT_NE(v.verdict.reason.find("modified an input"), std::string::npos) << v.verdict.reason;
  }
}

TEST(GraphSession, SaysWhyItCannotRun) {
  const GraphVerdict i8 = check_graph(branchy(1, DType::i8), registry(), "ref", 1);
  EXPECT_EQ(i8.verdict.status, Status::unsupported);
  EXPECT_NE(i8.verdict.reason.find("dt=i8"), std::string::npos) << i8.verdict.reason;
  Registry r;
  register_ref(r);
  const GraphVerdict none = check_graph(branchy(1), r, "nobody", 1);
  EXPECT_EQ(none.verdict.status, Status::unsupported);
  EXPECT_EQ(none.verdict.reason, "c1: nobody: no conv2d kernel");
  const Graph tokens =
      parse_network("input t=5\nemb embedding vocab=100 dim=8\nl lstm hc=8\n", "lm.txt", 1, DType::f32);
  const GraphVerdict embedding = check_graph(tokens, r, "ref", 1);
  EXPECT_EQ(embedding.verdict.status, Status::unsupported);
  EXPECT_NE(embedding.verdict.reason.find("embedding"), std::string::npos) << embedding.verdict.reason;
}

TEST(GraphSession, RunsOnOneDevice) {
  Registry r;
  register_ref(r);
  r.add({.id = "dense.elsewhere.test",
         .device = Device::gpu,
         .idea = "ref, said to be on the GPU",
         .accumulation = "f64"},
        [] { return oracle(Op::dense).make(); });
  const GraphVerdict v = check_graph(branchy(1), r, "elsewhere", 1, {},
                                     {r.find("conv2d.ref.naive"), r.find("pool2d.ref.naive"),
                                      r.find("add.ref.naive"), r.find("softmax.ref.naive")});
  EXPECT_EQ(v.verdict.status, Status::unsupported);
  EXPECT_NE(v.verdict.reason.find("a graph runs on one device"), std::string::npos) << v.verdict.reason;
}

// A GPU backend's graph in device memory (Kernel::bind), each layer verified; what a
// backend lacks (cuDNN a dense layer and an add) from another GPU backend. SKIPPED without
// a usable GPU.
TEST(GraphSession, GpuBackendsRunAGraphInDeviceMemory) {
  if (const std::string why = device_runtime(Device::gpu).why_unavailable(); !why.empty())
    GTEST_SKIP() << why;
  const Graph g = parse_network(R"(input c=8 h=16 w=16
c1   conv2d oc=16 kh=3 kw=3 ph=1
r1   relu
c2   conv2d oc=16 kh=1 kw=1
r2   relu
sum  add in=r2,r1
cat  concat in=sum,r1
p    maxpool k=2
f    flatten
fc   dense oc=10
prob softmax
)",
                                "gpu.txt", 2, DType::f32);
  int ran = 0;
  for (const char* backend : {"cuda", "cudnn"}) {
    std::vector<const KernelEntry*> chosen;
    for (const char* id : {"dense.cublas.lt", "add.cuda.default"})
      if (const KernelEntry* k = registry().find(id)) chosen.push_back(k);
    const GraphVerdict v = check_graph(g, registry(), backend, 3, {}, chosen);
    if (v.verdict.status == Status::unsupported) {
      std::printf("%s: %s\n", backend, v.verdict.reason.c_str());
      continue;
    }
    EXPECT_EQ(v.verdict.status, Status::passed) << backend << ": " << v.verdict.reason;
    ++ran;
  }
  EXPECT_GE(ran, 1);
}

}  // namespace
}  // namespace lb
