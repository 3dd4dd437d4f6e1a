#include "bench/harness/sweep.h"

#include <algorithm>
#include <map>
#include <set>

#include "kernels/common.h"
#include "kernels/data.h"
#include "kernels/ops/traits.h"

namespace lb::bench {

std::optional<Problem> separable_standard(const Problem& dw, const Problem& pw) {
  if (dw.op() != Op::conv2d || pw.op() != Op::conv2d || dw.dt != pw.dt) return std::nullopt;
  const Conv2d& d = dw.conv();
  const Conv2d& q = pw.conv();
  const bool pointwise =
      q.g == 1 && q.kh == 1 && q.kw == 1 && q.sh == 1 && q.sw == 1 && q.ph == 0 && q.pw == 0;
  if (!d.depthwise() || !pointwise || q.mb != d.mb || q.ic != d.oc || q.ih != d.oh() || q.iw != d.ow())
    return std::nullopt;
  Conv2d c = d;
  c.oc = q.oc;
  c.g = 1;
  Problem p{c, dw.dt, Relu::none, {}};
  if (!dw.name.empty() && !pw.name.empty()) p.name = dw.name + "." + pw.name + "_standard";
  return p;
}

std::vector<Case> expand(const SweepSpec& spec) {
  const Registry& reg = registry();
  const std::vector<std::string> built = reg.backends();
  for (const auto& b : spec.backends)
    if (std::find(built.begin(), built.end(), b) == built.end()) {
      std::string list;
      for (const auto& x : built)
        list += " " + x;
      throw Error("unknown backend '" + b + "' (built in:" + list + ")");
    }
  for (const auto& k : spec.kernels)
    if (!reg.find(k)) throw Error("unknown kernel '" + k + "' (see layerbench list)");
  if (spec.shards < 1 || spec.shard < 0 || spec.shard >= spec.shards)
    throw Error("--shard " + std::to_string(spec.shard) + "/" + std::to_string(spec.shards) +
                ": expected i/n with 0 <= i < n");

  // Problems, each source in the order given. A suite's or a line's --batch replaces its
  // mb; a network is loaded at batch 1 and --batch scales each layer's mb (a sequence
  // projection has T rows per sample).
  // With --separable-baseline, the standard convolution a depthwise -> pointwise pair of
  // one source replaces follows the pair, at relu none whatever the ReLU axis.
  std::vector<Source> base;
  auto unnamed = [](Problem p) {
    p.name.clear();
    return print(p);
  };
  // Two networks may name different layers alike (alexnet's and mobilenet_v1's conv1): a
  // case is named by its layer, so the later one is called "<network>.<layer>" rather than
  // taken for the first and left out.
  std::map<std::string, std::string> named;  // layer name -> its problem, unnamed
  auto add = [&](std::vector<Problem> from, bool per_sample, const std::string& network = {}) {
    for (size_t i = 0; i < from.size(); ++i) {
      if (!from[i].name.empty()) {
        const auto [at, fresh] = named.emplace(from[i].name, unnamed(from[i]));
        if (!fresh && at->second != unnamed(from[i]) && !network.empty())
          from[i].name = network + "." + from[i].name;
      }
      base.push_back({from[i], per_sample, false});
      if (!spec.separable_baseline || i == 0) continue;
      if (auto std_conv = separable_standard(from[i - 1], from[i]))
        base.push_back({std::move(*std_conv), per_sample, true});
    }
  };
  for (const auto& s : spec.suites)
    add(load_suite(s), false);
  for (const auto& n : spec.networks)
    add(problems(load_network(n, 1, DType::f32)), true, n);
  for (const auto& line : spec.problems)
    add({parse_problem(line)}, false);
  if (spec.suites.empty() && spec.networks.empty() && spec.problems.empty()) add(load_suite("smoke"), false);

  // Calls emit(c) for every combination of the values `of` these axes take for source s
  // (and kernel k), set on c in axes()' order.
  auto product = [&spec](const std::vector<const Axis*>& of, Case c, const Source& s, const KernelEntry* k,
                         const auto& emit) {
    auto step = [&](const auto& self, size_t i, Case& at) -> void {
      if (i == of.size()) return emit(at);
      const Axis& a = *of[i];
      const auto it = spec.axes.find(a.flag);
      for (const std::string& v :
           a.values(it == spec.axes.end() ? std::vector<std::string>{} : it->second, s, k)) {
        Case next = at;
        a.set(next, v, s);
        self(self, i + 1, next);
      }
    };
    step(step, 0, c);
  };
  // The problem's axes, then the case's, per kernel.
  std::vector<const Axis*> problem_axes, kernel_axes;
  for (const Axis& a : axes())
    (a.of_case ? kernel_axes : problem_axes).push_back(&a);
  std::vector<Problem> problems;
  std::vector<Source> sources;  // per problem: its source
  std::vector<bool> baseline;   // per problem: added by --separable-baseline
  for (const Source& b : base) {
    Case c;
    c.problem = b.p;
    product(problem_axes, c, b, nullptr, [&](const Case& at) {
      problems.push_back(at.problem);
      sources.push_back(b);
      baseline.push_back(b.baseline);
    });
  }
  // An added standard convolution is measured once per shape, dtype and batch: not when
  // the sweep has that problem already (under any name), nor twice for repeated pairs.
  if (spec.separable_baseline) {
    std::set<std::string> present;
    for (size_t i = 0; i < problems.size(); ++i)
      if (!baseline[i]) present.insert(unnamed(problems[i]));
    std::vector<Problem> kept;
    std::vector<Source> kept_sources;
    for (size_t i = 0; i < problems.size(); ++i)
      if (!baseline[i] || present.insert(unnamed(problems[i])).second) {
        kept.push_back(std::move(problems[i]));
        kept_sources.push_back(std::move(sources[i]));
      }
    problems = std::move(kept);
    sources = std::move(kept_sources);
  }

  std::vector<Case> cases;
  std::set<std::string> reported;  // kernel|reason of the unsupported entries already listed
  std::set<std::string> names;     // the cases already expanded
  for (size_t i = 0; i < problems.size(); ++i)
    for (const KernelEntry& k : reg.kernels()) {
      const Problem& p = problems[i];
      if (k.op_name() != name(p.op())) continue;
      const std::string backend(k.backend());
      if (spec.backends.empty()
              ? ((backend == "ref" || k.info.opt_in) && spec.kernels.empty() && !spec.every_kernel)
              : std::find(spec.backends.begin(), spec.backends.end(), backend) == spec.backends.end())
        continue;
      if (!spec.kernels.empty() &&
          std::find(spec.kernels.begin(), spec.kernels.end(), k.info.id) == spec.kernels.end())
        continue;
      const std::string why = k.supports(p);
      Case c;
      c.kernel = &k;
      c.problem = p;
      c.unsupported = why;
      product(kernel_axes, c, sources[i], &k, [&](Case at) {
        at.name = case_name(at);
        // An unsupported pair is listed once per kernel and reason, whatever the problem,
        // batch, ReLU mode or threads: one entry says it for all of them. A case is
        // expanded once, however many sources or axes name it (a suite line with
        // dt=bf16 and --dtype bf16 make the same case).
        if (!why.empty() && !reported.insert(k.info.id + "|" + why).second) return;
        if (!names.insert(at.name).second) return;
        cases.push_back(std::move(at));
      });
    }
  std::vector<Case> mine;
  for (size_t i = 0; i < cases.size(); ++i)
    if (int(i % size_t(spec.shards)) == spec.shard) mine.push_back(std::move(cases[i]));
  return mine;
}

}  // namespace lb::bench
