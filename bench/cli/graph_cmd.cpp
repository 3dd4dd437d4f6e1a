#include "bench/cli/graph_cmd.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/cli/args.h"
#include "bench/cli/format.h"
#include "bench/harness/git_info.h"
#include "bench/harness/machine.h"
#include "bench/harness/probes.h"
#include "bench/harness/sysinfo.h"
#include "kernels/common.h"
#include "kernels/data.h"
#include "kernels/device.h"
#include "kernels/graph_session.h"

namespace lb::cli {

const char* const kGraphUsage =
    R"(  check --graph N,... [--backend B,...] [--kernel ID,...] [--batch 2,...] [--dtype f32,...]
        [--threads N] [--seed N] [--verify-macs N] [--no-fuse]
                                     whole networks, each run by one backend (a kernel per layer:
                                     the backend's first that is not opt-in, or --kernel's for its
                                     op), every layer verified on the inputs it was given, and the
                                     output against the reference graph's; an in-place relu after
                                     a layer is fused into it (relu=fused) unless --no-fuse
  run --graph N,... [--backend B,...] [--kernel ID,...] [--batch 1,8,32|auto] [--dtype f32,...]
      [--threads N] [--seed N] [--per-node] [--memory-limit GIB] [--max-run-time SECONDS]
      [--min-time SECONDS] [--verify-macs N] [--no-fuse] [--machine NAME] [--out results/NAME.json]
                                     the whole forward timed as one case: time per run, images/s,
                                     measured peak host memory beside liveness's prediction
                                     (--per-node: each layer's share of the time); --batch auto
                                     doubles the batch from 1 until the next would need more than
                                     the memory available (or --memory-limit), or a run would
                                     take over --max-run-time (default 20) seconds; each case is
                                     verified after it is timed, and one that fails is not timed
)";

namespace {

bool has_flag(const std::vector<std::string>& argv, const std::string& flag) {
  for (const std::string& a : argv)
    if (a == "--" + flag || a.rfind("--" + flag + "=", 0) == 0) return true;
  return false;
}

struct GraphArgs {
  std::vector<std::string> graphs, backends;
  std::vector<const KernelEntry*> kernels;
  std::vector<int64_t> batches;  // empty: auto
  std::vector<DType> dtypes{DType::f32};
  int threads = 1;
  uint64_t seed = 1;
  int64_t verify_macs = kDefaultReferenceMacs;
  bool fuse_relu = true;
};

GraphArgs common_args(const Args& a, const std::string& command, std::vector<int64_t> default_batches) {
  GraphArgs g;
  g.graphs = split_list(*a.get("graph"));
  for (const std::string& n : g.graphs)
    (void)load_network(n, 1, DType::f32);  // an unknown or malformed network fails before anything runs
  const Registry& r = registry();
  if (auto k = a.get("kernel"))
    for (const std::string& id : split_list(*k)) {
      const KernelEntry* e = r.find(id);
      if (!e) throw Error(command + ": --kernel " + id + ": no such kernel (layerbench list)");
      g.kernels.push_back(e);
    }
  if (auto b = a.get("backend")) {
    g.backends = split_list(*b);
    const std::vector<std::string> known = r.backends();
    for (const std::string& name : g.backends)
      if (std::find(known.begin(), known.end(), name) == known.end())
        throw Error("unknown backend '" + name + "' (built in: " + join_list(known) + ")");
  } else {
    for (const std::string& name : r.backends())
      if (name != "ref") g.backends.push_back(name);
  }
  if (auto b = a.get("batch")) {
    if (*b != "auto")
      for (const std::string& v : split_list(*b))
        g.batches.push_back(positive("batch", v));
  } else {
    g.batches = std::move(default_batches);
  }
  if (auto d = a.get("dtype")) {
    g.dtypes.clear();
    for (const std::string& v : split_list(*d))
      g.dtypes.push_back(parse_dtype(v));
  }
  g.threads = int(a.integer("threads", 1));
  g.seed = uint64_t(a.integer("seed", 1));
  g.verify_macs = a.integer("verify-macs", kDefaultReferenceMacs);
  g.fuse_relu = !a.on("no-fuse");
  return g;
}

std::string case_line(const std::string& network, const std::string& backend, DType dt, int64_t batch,
                      int threads) {
  return network + " mb=" + std::to_string(batch) + " dt=" + std::string(name(dt)) +
         (threads > 1 ? " threads=" + std::to_string(threads) : "") + " backend=" + backend;
}

// Seconds of one whole forward, from several runs: their median.
struct Timing {
  std::vector<double> runs;
  double median = 0, rse = 0;
};

Timing time_runs(GraphSession& s, bool per_node, double min_time, double max_run_time) {
  Timing t;
  double spent = 0;
  while (t.runs.size() < 3 || (spent < min_time && t.runs.size() < 20)) {
    const double start = bench::wall_seconds();
    if (per_node)
      s.run_per_node();
    else
      s.run();
    const double seconds = bench::wall_seconds() - start;
    t.runs.push_back(seconds);
    spent += seconds;
    if (seconds > max_run_time && t.runs.size() >= 1) break;  // one slow run says enough
  }
  std::vector<double> sorted = t.runs;
  std::sort(sorted.begin(), sorted.end());
  t.median = sorted[sorted.size() / 2];
  double mean = 0, var = 0;
  for (double x : t.runs)
    mean += x;
  mean /= double(t.runs.size());
  for (double x : t.runs)
    var += (x - mean) * (x - mean);
  if (t.runs.size() > 1) t.rse = std::sqrt(var / double(t.runs.size() - 1) / double(t.runs.size())) / mean;
  return t;
}

// What this process may allocate: MemAvailable or the cgroup's limit (bench::available_bytes),
// or --memory-limit where lower.
double allowed_bytes(double limit_gib) {
  const double available = double(bench::available_bytes());
  return limit_gib > 0 ? std::min(available, limit_gib * 1073741824.0) : available;
}

// Empty when `copies` graphs of g's liveness (parameters and the live activations) fit in
// 90 % of the memory this process may allocate (or --memory-limit), else the one-line
// out-of-memory reason: asked before anything is allocated, so that a batch too large is
// out_of_memory rather than killed (the kernels' packed copies come on top: a lower bound).
std::string memory_reason(const Graph& g, int copies, double limit_gib) {
  const double need = copies * liveness(g, Pass::fwd).total();
  const double available = allowed_bytes(limit_gib);
  if (available <= 0 || need <= 0.9 * available) return {};
  return "out of memory: needs at least " + gib(need) + " GiB by liveness" +
         (copies > 1 ? " (the network and the reference graph)" : "") + ", " + gib(available) +
         " GiB available";
}

}  // namespace

bool asks_for_graph(const std::vector<std::string>& argv) {
  return has_flag(argv, "graph");
}

int check_graph_command(const std::vector<std::string>& argv) {
  const Args a = parse_args(
      "check", argv, {"graph", "backend", "kernel", "batch", "dtype", "threads", "seed", "verify-macs"},
      {"no-fuse"});
  const GraphArgs g = common_args(a, "check", {2});
  if (g.batches.empty()) throw Error("check: --batch auto is for run --graph");
  StatusCounts counts;
  for (const std::string& network : g.graphs)
    for (DType dt : g.dtypes)
      for (int64_t batch : g.batches) {
        const Graph graph = load_network(network, batch, dt);
        const std::string too_big = memory_reason(graph, 2, 0);
        for (const std::string& backend : g.backends) {
          const double start = bench::wall_seconds();
          GraphVerdict v;
          if (!too_big.empty()) {
            v.verdict.status = Status::out_of_memory;
            v.verdict.reason = too_big;
          } else {
            v = check_graph(graph, registry(), backend, g.seed, Context{g.threads}, g.kernels, g.verify_macs,
                            g.fuse_relu);
          }
          counts.add(v.verdict.status);
          std::printf("%-13s graph %s\n              %s (%.1f s)\n",
                      std::string(name(v.verdict.status)).c_str(),
                      case_line(network, backend, dt, batch, g.threads).c_str(), v.verdict.reason.c_str(),
                      bench::wall_seconds() - start);
          std::fflush(stdout);
        }
      }
  std::printf("check: %s\n", counts.summary().c_str());
  return counts.of[int(Status::failed)] ? 1 : 0;
}

int run_graph_command(const std::vector<std::string>& argv) {
  const Args a = parse_args("run", argv,
                            {"graph", "backend", "kernel", "batch", "dtype", "threads", "seed", "verify-macs",
                             "memory-limit", "max-run-time", "min-time", "machine", "out"},
                            {"per-node", "no-fuse"});
  const GraphArgs g = common_args(a, "run", {1});
  const bool per_node = a.on("per-node");
  const double min_time = a.number("min-time", 1.0, 0, "1 (seconds)", true);
  const double max_run_time = a.number("max-run-time", 20.0, 0, "20 (seconds)", true);
  const double limit_gib = a.number("memory-limit", 0.0, 0, "8 (GiB)", true);
  const bench::Machine machine = bench::identify_machine(a.get("machine").value_or(""), "");
  const std::string out_path = a.get("out").value_or("");
  bench::use_honest_allocator();

  const std::string started = [] {
    char text[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    return std::string(text);
  }();
  nlohmann::ordered_json results = {
      {"layerbench_graph_runs", 1},  {"machine", machine.name},           {"date", started},
      {"commit", bench::kGitCommit}, {"build", bench::kBuildDescription}, {"threads", g.threads}};
  results["cpu"] = bench::cpu_model() + " (" + bench::cpu_signature() + "; " + bench::cpu_isa() + ")";
  for (const auto& [key, value] : machine.facts)  // whose numbers these are
    results["machine_facts"][key] = value;
  results["runs"] = nlohmann::ordered_json::array();
  auto save = [&] {
    if (out_path.empty()) return;
    std::ofstream f(out_path);
    f << results.dump(1) << "\n";
    if (!f) throw Error("run: cannot write " + out_path);
  };
  std::printf("%-44s %10s %10s %9s %10s %10s %6s  %s\n", "case", "ms/run", "images/s", "GMAC/s", "host MB",
              "liveness", "ratio", "status");
  int failed = 0;
  for (const std::string& network : g.graphs)
    for (DType dt : g.dtypes)
      for (const std::string& backend : g.backends) {
        const bool automatic = g.batches.empty();
        std::vector<int64_t> batches = automatic ? std::vector<int64_t>{1} : g.batches;
        double last_peak = 0, last_predicted = 0, last_seconds = 0;
        for (size_t bi = 0; bi < batches.size(); ++bi) {
          const int64_t batch = batches[bi];
          const Graph graph = load_network(network, batch, dt);
          const Liveness live = liveness(graph, Pass::fwd);
          const double predicted = live.total();
          const std::string label = case_line(network, backend, dt, batch, g.threads);
          nlohmann::ordered_json row = {{"network", network},
                                        {"backend", backend},
                                        {"dtype", name(dt)},
                                        {"batch", batch},
                                        {"threads", g.threads},
                                        {"liveness_bytes", predicted},
                                        {"liveness_activations", live.activations},
                                        {"liveness_at", live.at},
                                        {"parameter_bytes_model", live.memory.parameters}};
          // Memory: the resident set's high-water mark over the baseline, from allocating the
          // arena to the last timed run; verification (the reference's buffers) comes after.
          bench::release_free_memory();
          bench::reset_rss_peak();
          const size_t baseline = bench::rss_bytes();
          std::string status = "passed", reason;
          try {
            GraphSession s(graph, registry(), backend, Context{g.threads}, g.kernels, g.fuse_relu);
            if (const std::string too_big = memory_reason(graph, 1, limit_gib); !too_big.empty()) {
              status = "out_of_memory";
              reason = too_big;
            } else if (!s.unsupported().empty()) {
              status = "unsupported";
              reason = s.unsupported();
            } else {
              s.allocate(g.seed);
              s.prepare();
              s.run();  // the first run: the libraries' one-time start-up, untimed
              const Timing t = time_runs(s, per_node, min_time, max_run_time);
              const double peak =
                  double(bench::rss_peak_bytes() - std::min(baseline, bench::rss_peak_bytes()));
              const GraphVerdict v = s.run_verified(g.verify_macs);
              if (v.verdict.status == Status::failed) {
                status = "failed";
                reason = v.worst_node + ": " + v.verdict.reason;
              } else {
                if (v.verdict.status == Status::mistrusted) status = "mistrusted";
                const GraphTotals tot = totals(graph);
                row["seconds"] = t.median;
                row["runs"] = t.runs;
                row["rse"] = t.rse;
                row["images_per_s"] = double(batch) / t.median;
                row["macs"] = tot.macs;
                row["gmacs_per_s"] = double(tot.macs) / t.median / 1e9;
                row["host_peak_bytes"] = peak;
                row["arena_bytes"] = s.arena_bytes();
                row["parameter_bytes"] = s.parameter_bytes();
                row["scratch_bytes"] = s.scratch_bytes();
                row["temporary_bytes"] = s.temporary_bytes();
                row["kernels"] = s.node_kernels();
                if (per_node) {
                  // Each layer's share of the timed runs, and by type (conv, depthwise, relu, add...).
                  nlohmann::ordered_json shares = nlohmann::ordered_json::object();
                  nlohmann::ordered_json by_type = nlohmann::ordered_json::object();
                  double total = 0;
                  for (double x : s.node_seconds())
                    total += x;
                  for (size_t i = 0; i < graph.nodes.size(); ++i) {
                    const double share = total > 0 ? s.node_seconds()[i] / total : 0.0;
                    shares[graph.nodes[i].name] = share;
                    const std::string& type = graph.nodes[i].type;
                    by_type[type] = by_type.value(type, 0.0) + share;
                  }
                  row["node_share"] = shares;
                  row["type_share"] = by_type;
                }
                last_peak = peak;
                last_predicted = predicted;
                last_seconds = t.median;
                std::printf("%-44s %10.2f %10.1f %9.2f %10.1f %10.1f %6.2f  %s\n", label.c_str(),
                            t.median * 1e3, double(batch) / t.median, double(tot.macs) / t.median / 1e9,
                            peak / 1e6, predicted / 1e6, predicted > 0 ? peak / predicted : 0.0,
                            status.c_str());
              }
            }
          } catch (const std::bad_alloc&) {
            status = "out_of_memory";
            reason = "out of memory at batch " + std::to_string(batch);
          } catch (const std::exception& e) {
            status = "failed";
            reason = e.what();
          }
          row["status"] = status;
          if (!reason.empty()) {
            row["reason"] = reason;
            std::printf("%-44s %s: %s\n", label.c_str(), status.c_str(), reason.c_str());
          }
          if (status == "failed") ++failed;
          std::fflush(stdout);
          // --batch auto: the next batch, if it would fit and finish.
          if (automatic && (status == "passed" || status == "mistrusted")) {
            const int64_t next = batch * 2;
            std::string stop;
            double next_predicted = 0;
            try {  // a batch past a layer's size limits (with_batch, kernels/problem.h) stops it too
              next_predicted = liveness(load_network(network, next, dt), Pass::fwd).total();
            } catch (const Error& e) {
              stop = "batch " + std::to_string(next) + ": " + e.what();
            }
            // The measured peak scaled as liveness scales it, against what may be allocated.
            const double need = last_peak * (last_predicted > 0 ? next_predicted / last_predicted : 2.0);
            const double available = allowed_bytes(limit_gib);
            if (stop.empty() && need > 0.8 * available)
              stop = "batch " + std::to_string(next) + " would need about " + gib(need) + " GiB of " +
                     gib(available) + " GiB available (80 % at most)";
            else if (stop.empty() && last_seconds * 2 > max_run_time)
              stop = "batch " + std::to_string(next) + " would take about " +
                     std::to_string(int(last_seconds * 2)) + " s per run, over --max-run-time";
            if (stop.empty())
              batches.push_back(next);
            else
              row["auto_stop"] = stop, std::printf("%-44s auto: stopped: %s\n", label.c_str(), stop.c_str());
          }
          results["runs"].push_back(row);
          save();
        }
      }
  return failed ? 1 : 0;
}

}  // namespace lb::cli
