#include "bench/harness/sweep.h"

#include <algorithm>
#include <set>

#include "kernels/common.h"
#include "kernels/data.h"

namespace lb::bench {

std::string problem_name(const Problem& p, bool cold, bool blocking) {
  std::string n = p.name.empty() ? short_name(p) : p.name + "-mb" + std::to_string(p.batch());
  if (p.relu != Relu::none) n += "-relu_" + std::string(name(p.relu));
  if (cold) n += "-cold";
  if (blocking) n += "-sync_blocking";
  return n;
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
  struct Source {
    Problem p;
    bool per_sample;
  };
  std::vector<Source> base;
  for (const auto& s : spec.suites)
    for (Problem& p : load_suite(s))
      base.push_back({std::move(p), false});
  for (const auto& n : spec.networks)
    for (Problem& p : problems(load_network(n, 1, DType::f32)))
      base.push_back({std::move(p), true});
  for (const auto& line : spec.problems)
    base.push_back({parse_problem(line), false});
  if (spec.suites.empty() && spec.networks.empty() && spec.problems.empty())
    for (Problem& p : load_suite("smoke"))
      base.push_back({std::move(p), false});

  std::vector<Problem> problems;
  for (const auto& [b, per_sample] : base) {
    const std::vector<int64_t> batches = spec.batches.empty() ? std::vector<int64_t>{0} : spec.batches;
    const std::vector<DType> dtypes = spec.dtypes.empty() ? std::vector<DType>{b.dt} : spec.dtypes;
    const std::vector<Relu> relus = spec.relus.empty() ? std::vector<Relu>{b.relu} : spec.relus;
    for (int64_t mb : batches)
      for (DType dt : dtypes)
        for (Relu relu : relus) {
          // A layer's rows per sample times the batch, checked before it can overflow;
          // with_batch() then applies a problem line's limits.
          if (per_sample && mb > (int64_t(1) << 31) / std::max<int64_t>(b.batch(), 1))
            throw Error("--batch " + std::to_string(mb) + ": layer " + b.name +
                        " would have more than 2^31 rows");
          Problem p = mb == 0 ? b : with_batch(b, per_sample ? b.batch() * mb : mb);
          p.dt = dt;
          p.relu = relu;
          problems.push_back(std::move(p));
        }
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
