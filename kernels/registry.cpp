#include "kernels/registry.h"

#include <algorithm>

#include "kernels/common.h"
#include "kernels/ops/traits.h"

namespace lb {

std::string_view name(Device d) {
  return d == Device::cpu ? "cpu" : "gpu";
}

namespace {

class SplitByPass final : public Kernel {
 public:
  SplitByPass(std::unique_ptr<Kernel> forward, std::unique_ptr<Kernel> backward)
      : forward_(std::move(forward)), backward_(std::move(backward)) {}

  std::string supports(const Problem& p) const override {
    if (runs_forward(p.pass))
      if (std::string why = forward_->supports(p); !why.empty()) return why;
    if (runs_backward(p.pass))
      if (std::string why = backward_->supports(p); !why.empty()) return why;
    return {};
  }
  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    forward_on_ = runs_forward(p.pass);
    backward_on_ = runs_backward(p.pass);
    if (forward_on_) forward_->prepare(p, ts, ctx);
    if (backward_on_) backward_->prepare(p, ts, ctx);
  }
  void run(TensorSet& ts) override {
    if (forward_on_) forward_->run(ts);
    if (backward_on_) backward_->run(ts);
  }
  void finish(TensorSet& ts) override {
    if (forward_on_) forward_->finish(ts);
    if (backward_on_) backward_->finish(ts);
  }
  void rearm(TensorSet& ts) override {
    if (forward_on_) forward_->rearm(ts);
    if (backward_on_) backward_->rearm(ts);
  }
  void release() override {
    if (forward_on_) forward_->release();
    if (backward_on_) backward_->release();
    forward_on_ = backward_on_ = false;
  }
  std::string details() const override {
    const std::string f = forward_on_ ? forward_->details() : "",
                      b = backward_on_ ? backward_->details() : "";
    return f.empty() ? b : b.empty() ? f : "forward: " + f + "; backward: " + b;
  }
  size_t scratch_bytes() const override {
    return (forward_on_ ? forward_->scratch_bytes() : 0) + (backward_on_ ? backward_->scratch_bytes() : 0);
  }
  size_t saved_bytes() const override {
    return (forward_on_ ? forward_->saved_bytes() : 0) + (backward_on_ ? backward_->saved_bytes() : 0);
  }
  bool rounds_before_bias() const override { return forward_on_ && forward_->rounds_before_bias(); }

 private:
  std::unique_ptr<Kernel> forward_, backward_;
  bool forward_on_ = false, backward_on_ = false;
};

}  // namespace

std::unique_ptr<Kernel> split_by_pass(std::unique_ptr<Kernel> forward, std::unique_ptr<Kernel> backward) {
  return std::make_unique<SplitByPass>(std::move(forward), std::move(backward));
}

std::string_view KernelEntry::op_name() const {
  return std::string_view(info.id).substr(0, info.id.find('.'));
}

std::string_view KernelEntry::backend() const {
  const size_t a = info.id.find('.');
  return std::string_view(info.id).substr(a + 1, info.id.find('.', a + 1) - a - 1);
}

std::string require_dtypes(const Problem& p, std::initializer_list<DType> allowed) {
  if (std::find(allowed.begin(), allowed.end(), p.dt) != allowed.end()) return {};
  std::string list;
  for (DType d : allowed)
    list += (list.empty() ? "" : ", ") + std::string(name(d));
  return "dt=" + std::string(name(p.dt)) + " not supported (" + list + " only)";
}

std::string KernelEntry::supports(const Problem& p) const {
  std::string why;
  if (op_name() != name(p.op())) {
    why = info.id + " computes " + std::string(op_name());
  } else if (std::find(info.passes.begin(), info.passes.end(), p.pass) == info.passes.end()) {
    std::string has;
    for (Pass pass : info.passes)
      has += (has.empty() ? "" : ", ") + std::string(name(pass));
    why = "dir=" + std::string(name(p.pass)) + " not computed (" + has + " only)";
  } else if (p.relu == Relu::relu6 && runs_backward(p.pass)) {
    why = "relu=relu6: forward passes only";
  } else if (p.relu == Relu::relu6 && !info.relu6) {
    why = "relu=relu6 not in this kernel's store (it clips at 0 only)";
  } else {
    why = make()->supports(p);
  }
  // Kernels give bare reasons; the backend's name goes in front here, once for all of them.
  return why.empty() ? why : std::string(backend()) + ": " + why;
}

void Registry::add(KernelInfo info, std::function<std::unique_ptr<Kernel>()> make) {
  const std::string& id = info.id;
  const size_t a = id.find('.');
  const size_t b = a == std::string::npos ? a : id.find('.', a + 1);
  if (b == std::string::npos || a == 0 || b == a + 1 || b + 1 == id.size() ||
      id.find('.', b + 1) != std::string::npos)
    throw Error("kernel id '" + id + "': expected <op>.<backend>.<variant>");
  const OpTraits& op = traits(parse_op(id.substr(0, a)));
  if (info.passes.empty()) throw Error("kernel " + id + ": no pass (KernelInfo::passes)");
  for (Pass pass : info.passes)
    if (std::find(op.passes.begin(), op.passes.end(), pass) == op.passes.end())
      throw Error("kernel " + id + ": dir=" + std::string(name(pass)) + ": " + std::string(op.no_pass));
  if (find(id)) throw Error("kernel id '" + id + "' registered twice");
  kernels_.push_back({std::move(info), std::move(make)});
}

const KernelEntry* Registry::find(std::string_view id) const {
  for (const auto& k : kernels_)
    if (k.info.id == id) return &k;
  return nullptr;
}

std::vector<std::string> Registry::backends() const {
  std::vector<std::string> out;
  for (const auto& k : kernels_) {
    std::string b(k.backend());
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  }
  return out;
}

const Registry& reference_registry() {
  static const Registry r = [] {
    Registry reg;
    register_ref(reg);
    return reg;
  }();
  return r;
}

}  // namespace lb
