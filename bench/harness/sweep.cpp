#include "bench/harness/sweep.h"

#include <algorithm>
#include <map>
#include <set>

#include "kernels/common.h"
#include "kernels/data.h"
#include "kernels/ops/traits.h"

namespace lb::bench {

std::string problem_name(const Problem& p, bool cold, bool blocking) {
  std::string n = p.name.empty() ? short_name(p) : p.name + "-mb" + std::to_string(p.batch());
  if (p.relu != Relu::none) n += "-relu_" + std::string(name(p.relu));
  if (p.pass != Pass::fwd) n += "-dir_" + std::string(name(p.pass));
  if (cold) n += "-cold";
  if (blocking) n += "-sync_blocking";
  return n;
}

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
  struct Source {
    Problem p;
    bool per_sample;
    bool baseline = false;  // added by --separable-baseline
  };
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
      base.push_back({from[i], per_sample});
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

  std::vector<Problem> problems;
  std::vector<bool> baseline;  // per problem: added by --separable-baseline
  for (const auto& [b, per_sample, added] : base) {
    const std::vector<int64_t> batches = spec.batches.empty() ? std::vector<int64_t>{0} : spec.batches;
    const std::vector<DType> dtypes = spec.dtypes.empty() ? std::vector<DType>{b.dt} : spec.dtypes;
    const std::vector<Relu> relus = added                ? std::vector<Relu>{Relu::none}
                                    : spec.relus.empty() ? std::vector<Relu>{b.relu}
                                                         : spec.relus;
    // The --dir axis takes the passes the op has; a problem's own dir= was checked when parsed.
    std::vector<Pass> passes;
    const OpTraits& op = traits(b.op());
    for (Pass pass : spec.passes.empty() ? std::vector<Pass>{b.pass} : spec.passes)
      if (std::find(op.passes.begin(), op.passes.end(), pass) != op.passes.end()) passes.push_back(pass);
    for (int64_t mb : batches)
      for (DType dt : dtypes)
        for (Relu relu : relus)
          for (Pass pass : passes) {
            // A layer's rows per sample times the batch, checked before it can overflow;
            // with_batch() then applies a problem line's limits.
            if (per_sample && mb > (int64_t(1) << 31) / std::max<int64_t>(b.batch(), 1))
              throw Error("--batch " + std::to_string(mb) + ": layer " + b.name +
                          " would have more than 2^31 rows");
            Problem p = mb == 0 ? b : with_batch(b, per_sample ? b.batch() * mb : mb);
            p.dt = dt;
            p.relu = relu;
            p.pass = pass;
            problems.push_back(std::move(p));
            baseline.push_back(added);
          }
  }
  // An added standard convolution is measured once per shape, dtype and batch: not when
  // the sweep has that problem already (under any name), nor twice for repeated pairs.
  if (spec.separable_baseline) {
    std::set<std::string> present;
    for (size_t i = 0; i < problems.size(); ++i)
      if (!baseline[i]) present.insert(unnamed(problems[i]));
    std::vector<Problem> kept;
    for (size_t i = 0; i < problems.size(); ++i)
      if (!baseline[i] || present.insert(unnamed(problems[i])).second) kept.push_back(std::move(problems[i]));
    problems = std::move(kept);
  }

  std::vector<Case> cases;
  std::set<std::string> reported;  // kernel|reason of the unsupported entries already listed
  std::set<std::string> names;     // the cases already expanded
  for (const Problem& p : problems)
    for (const KernelEntry& k : reg.kernels()) {
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
      const bool gpu = k.info.device == Device::gpu;
      // Threads are a CPU axis, the way of waiting for the device a GPU one.
      const std::vector<bool> syncs = gpu ? spec.blocking_syncs : std::vector<bool>{false};
      // Threads are an axis of multithreaded CPU kernels; the others run once, on one.
      const bool threaded = k.info.multithreaded && !gpu;
      const std::vector<int> threads = threaded ? spec.threads : std::vector<int>{1};
      for (int t : threads)
        for (bool blocking : syncs) {
          Case c{&k, p, t, spec.cold, blocking, {}, why, {}};
          c.name = k.info.id + "/" + std::string(name(p.dt)) + "/" + problem_name(p, spec.cold, blocking) +
                   "/threads:" + std::to_string(t);
          // An unsupported pair is listed once per kernel and reason, whatever the
          // problem, batch, ReLU mode or threads: one entry says it for all of them. A
          // case is expanded once, however many sources or axes name it (a suite line
          // with dt=bf16 and --dtype bf16 make the same case).
          if (!why.empty() && !reported.insert(k.info.id + "|" + why).second) continue;
          if (!names.insert(c.name).second) continue;
          cases.push_back(std::move(c));
        }
    }
  std::vector<Case> mine;
  for (size_t i = 0; i < cases.size(); ++i)
    if (int(i % size_t(spec.shards)) == spec.shard) mine.push_back(std::move(cases[i]));
  return mine;
}

}  // namespace lb::bench
