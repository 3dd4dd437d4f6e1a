// layerbench — one binary, subcommands:
//   list      backends built in, every kernel id and what it supports, the networks and suites
//   analyze   the analytic model of a network or one problem (per-layer table, totals)
//   check     every kernel against the reference, on a suite, a network or one problem
// Bad input (a flag, a file:line, a token) is one line on stderr and exit code 2;
// a failed check is exit code 1.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>

#include "bench/cli/args.h"
#include "bench/cli/format.h"
#include "bench/cli/graph_cmd.h"
#include "bench/cli/run_args.h"
#include "bench/harness/git_info.h"
#include "bench/harness/machine.h"
#include "bench/harness/run.h"
#include "bench/harness/sweep.h"
#include "kernels/case_session.h"
#include "kernels/common.h"
#include "kernels/data.h"
#include "kernels/model.h"
#include "kernels/ops/traits.h"
#include "kernels/registry.h"
#include "kernels/verify.h"

namespace lb::cli {
namespace {

constexpr double kMB = 1e6;  // tables print decimal megabytes: 1000x1000 f32 = 4.00 MB

const char* kUsage = R"(usage: layerbench <command> [options]

commands:
  list [--json]                      backends built in; every kernel, its dtypes and passes; networks, suites
  analyze <network | "problem line"> [--batch N] [--dtype D] [--training [--optimizer sgd|momentum|adam]] [--json]
                                     parameters, memory and MACs per layer, and totals
  check [--suite S | --network N | --problem "LINE"] [--backend B] [--kernel ID]
        [--batch N] [--dtype D,...] [--dir P,...] [--seed N] [--threads N] [--full] [--max-macs N]
        [--separable-baseline]
                                     verify kernels against the reference (default: --suite smoke;
                                     big problems on a sample of the batch unless --full;
                                     problems over --max-macs are skipped; --separable-baseline
                                     as for run)
  help, --version                    this text; the version, commit and build
  COMMAND --help                     one command's options
)";

const char* kUsageFooter = R"(
Suites are bench/suites/NAME.txt and networks bench/networks/NAME.txt (or a path);
LAYERBENCH_DATA points at another bench/ folder.
)";

bool looks_like_problem(const std::string& s) {
  return s.find('=') != std::string::npos;
}

int cmd_list(const std::vector<std::string>& argv) {
  const Args a = parse_args("list", argv, {}, {"json"});
  const Registry& reg = registry();
  // The op's probe problems (its OpTraits) tell which dtypes a kernel supports: a dtype
  // counts when any probe of the op is supported (a depthwise-only kernel declines the rest).
  nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
  for (const auto& k : reg.kernels()) {
    std::vector<std::string> dtypes;
    nlohmann::ordered_json declined = nlohmann::ordered_json::object();
    for (DType dt : kAllDTypes) {
      std::string why;
      for (std::string_view line : traits(parse_op(k.op_name())).probes) {
        Problem p = parse_problem(line);
        p.dt = dt;
        why = k.supports(p);
        if (why.empty()) break;
      }
      if (why.empty())
        dtypes.emplace_back(name(dt));
      else
        declined[std::string(name(dt))] = why;
    }
    std::vector<std::string> passes;
    for (Pass pass : k.info.passes)
      passes.emplace_back(name(pass));
    kernels.push_back({{"id", k.info.id},
                       {"op", k.op_name()},
                       {"device", std::string(name(k.info.device))},
                       {"accumulation", k.info.accumulation},
                       {"dtypes", dtypes},
                       {"passes", passes},
                       {"opt_in", k.info.opt_in},  // swept only when named (--kernel, or their --backend)
                       {"idea", k.info.idea},
                       {"declined", declined}});
  }
  if (a.on("json")) {
    const nlohmann::ordered_json out = {{"backends", reg.backends()},
                                        {"kernels", kernels},
                                        {"networks", list_data("networks")},
                                        {"suites", list_data("suites")}};
    std::cout << out.dump(1) << "\n";
    return 0;
  }
  std::string backends;
  for (const auto& b : reg.backends())
    backends += " " + b;
  std::cout << "backends built in:" << backends << "\n\n";
  Table t({"kernel", "device", "acc", "dtypes", "idea"}, {true, true, true, true, true});
  std::vector<std::string> reasons;
  for (const auto& k : kernels) {
    std::string dtypes;
    for (const auto& dt : k["dtypes"]) {
      if (!dtypes.empty()) dtypes += ' ';
      dtypes += dt.get<std::string>();
    }
    for (const auto& [dt, why] : k["declined"].items())
      reasons.push_back(k["id"].get<std::string>() + " " + dt + ": " + why.get<std::string>());
    t.add({k["id"].get<std::string>(), k["device"].get<std::string>(), k["accumulation"].get<std::string>(),
           dtypes, (k["opt_in"].get<bool>() ? "[opt-in] " : "") + k["idea"].get<std::string>()});
  }
  std::cout << t.str();
  if (!reasons.empty()) {
    std::cout << "\nnot supported:\n";
    for (const auto& r : reasons)
      std::cout << "  " << r << "\n";
  }
  std::cout << "\nnetworks: ";
  for (const auto& n : list_data("networks"))
    std::cout << n << " ";
  std::cout << "\nsuites: ";
  for (const auto& n : list_data("suites"))
    std::cout << n << " ";
  std::cout << "\n";
  return 0;
}

// "parameters 1.00 + gradients 1.00 + ... MB": a training memory's parts, as a line.
std::string training_parts(const TrainingMemory& t, Optimizer opt, std::string_view kept) {
  std::string s =
      "parameters " + fixed(t.parameters / kMB, 2) + " + gradients " + fixed(t.gradients / kMB, 2);
  if (t.optimizer_state > 0)
    s += " + " + std::string(name(opt)) + " state (f32) " + fixed(t.optimizer_state / kMB, 2);
  if (t.master_weights > 0) s += " + f32 master weights " + fixed(t.master_weights / kMB, 2);
  return s + " + " + std::string(kept) + " " + fixed(t.kept / kMB, 2);
}

void print_problem_model(const Problem& p, bool as_json, bool training, Optimizer opt) {
  const Model m = model(p);
  const TrainingMemory train = training_memory(p, opt);
  if (as_json) {
    std::cout << "{\"problem\": " << json_string(print(p)) << ", \"type\": " << json_string(layer_type(p))
              << ", \"params\": " << m.params << ", \"param_bytes\": " << m.param_bytes
              << ", \"src_bytes\": " << m.src_bytes << ", \"dst_bytes\": " << m.dst_bytes
              << ", \"relu_bytes\": " << m.relu_bytes << ", \"macs\": " << m.macs
              << ", \"macs_on_input\": " << m.macs_on_input << ", \"flops\": " << m.flops
              << ", \"min_bytes\": " << m.min_bytes << ", \"intensity\": " << m.intensity
              << ", \"inference_bytes\": " << m.inference_bytes << ", \"saved_bytes\": " << m.saved_bytes
              << ", \"training_bytes\": " << train.total() << ", \"optimizer\": \"" << name(opt) << "\"}\n";
    return;
  }
  Table t({"quantity", "value"}, {true, false});
  t.add({"problem", print(p)});
  t.add({"type", layer_type(p)});
  t.add({"parameters", with_commas(m.params)});
  t.add({"parameter MB", fixed(m.param_bytes / kMB, 3)});
  t.add({"input MB", fixed(m.src_bytes / kMB, 3)});
  t.add({"output MB", fixed(m.dst_bytes / kMB, 3)});
  if (p.relu == Relu::separate) t.add({"separate ReLU output MB", fixed(m.relu_bytes / kMB, 3)});
  t.add({"MACs", with_commas(m.macs)});
  if (m.macs_on_input != m.macs)
    t.add({"MACs on the input (padding left out)", with_commas(m.macs_on_input)});
  t.add({m.macs_on_input != m.macs ? "FLOPs (2 x MACs on the input)" : "FLOPs (2 x MACs)",
         with_commas(int64_t(m.flops))});
  t.add({"minimum bytes moved", with_commas(int64_t(m.min_bytes))});
  t.add({"arithmetic intensity (FLOP/B)", fixed(m.intensity, 2)});
  if (training && m.saved_bytes > 0)
    t.add({"kept for the backward beyond input and output MB", fixed(m.saved_bytes / kMB, 3)});
  t.add({training ? "training memory MB (" + std::string(name(opt)) + ")" : "inference memory MB",
         fixed((training ? train.total() : m.inference_bytes) / kMB, 3)});
  std::cout << t.str();
  if (training)
    std::cout << "training memory: " << training_parts(train, opt, "kept for the backward") << " MB\n";
}

void print_network(const Graph& net, bool as_json, bool training, Optimizer opt) {
  const GraphTotals tot = totals(net, opt);
  if (as_json) {
    std::ostringstream o;
    o << "{\"network\": " << json_string(net.name) << ", \"batch\": " << net.batch
      << ", \"dtype\": " << json_string(std::string(name(net.dt))) << ", \"input_shape\": \""
      << shape_string(net.in_shape) << "\", \"layers\": [";
    for (size_t i = 0; i < net.nodes.size(); ++i) {
      const Node& l = net.nodes[i];
      o << (i ? ", " : "") << "\n  {\"name\": " << json_string(l.name)
        << ", \"kind\": " << json_string(l.kind) << ", \"type\": " << json_string(l.type)
        << ", \"problem\": " << (l.problem ? json_string(print(*l.problem)) : "null")
        << ", \"output_shape\": \"" << shape_string(l.out_shape) << "\", \"params\": " << l.params
        << ", \"param_bytes\": " << l.param_bytes << ", \"activation_bytes\": " << l.out_bytes
        << ", \"macs\": " << l.macs << "}";
    }
    o << "],\n \"totals\": {\"params\": " << tot.params << ", \"param_bytes\": " << tot.param_bytes
      << ", \"activation_bytes\": " << tot.activation_bytes << ", \"macs\": " << tot.macs
      << ", \"flops\": " << 2.0 * double(tot.macs) << ", \"inference_bytes\": " << tot.inference_bytes
      << ", \"training_bytes\": " << tot.training_bytes << "}}\n";
    std::cout << o.str();
    return;
  }
  std::cout << net.name << ": batch " << net.batch << ", dt=" << name(net.dt) << ", input "
            << shape_string(net.in_shape) << " per sample\n\n";
  Table t({"layer", "type", "output", "params", "param MB", "act MB", "MMACs"},
          {true, true, true, false, false, false, false});
  for (const Node& l : net.nodes)
    t.add({l.name, l.type, shape_string(l.out_shape), with_commas(l.params), fixed(l.param_bytes / kMB, 2),
           l.new_buffer ? fixed(l.out_bytes / kMB, 2) : "(in place)", fixed(double(l.macs) / 1e6, 2)});
  t.rule();
  t.add({"total", "", "", with_commas(tot.params), fixed(tot.param_bytes / kMB, 2),
         fixed((tot.activation_bytes - net.in_bytes) / kMB, 2), fixed(double(tot.macs) / 1e6, 2)});
  std::cout << t.str() << "\n";
  std::cout << "MACs " << with_commas(tot.macs) << " (FLOPs = 2 x MACs = " << fixed(2.0 * double(tot.macs), 0)
            << ")\n";
  const Liveness live = liveness(net, training ? Pass::train : Pass::fwd, opt);
  if (training)
    std::cout << "memory (training, " << name(opt) << ", by liveness): " << fixed(live.total() / kMB, 2)
              << " MB = "
              << training_parts(live.memory, opt,
                                "activations and their gradients at their peak (" + live.at + ")")
              << "\n";
  else
    std::cout << "memory (inference, by liveness): " << fixed(live.total() / kMB, 2) << " MB = parameters "
              << fixed(live.memory.parameters / kMB, 2) << " + the live activations at their peak ("
              << live.at << ") " << fixed(live.activations / kMB, 2) << "\n";
}

int cmd_analyze(const std::vector<std::string>& argv) {
  const Args a = parse_args("analyze", argv, {"batch", "dtype", "optimizer"}, {"json", "training"});
  if (a.positional.size() != 1)
    throw Error("analyze: expected one network name or quoted problem line, got " +
                std::to_string(a.positional.size()));
  const std::string& what = a.positional[0];
  const auto dtype_flag = a.get("dtype");
  const DType dt = dtype_flag ? parse_dtype(*dtype_flag) : DType::f32;
  const auto optimizer_flag = a.get("optimizer");
  if (optimizer_flag && !a.on("training"))
    throw Error("analyze: --optimizer is a training step's; add --training");
  const Optimizer opt = optimizer_flag ? parse_optimizer(*optimizer_flag) : Optimizer::sgd;
  if (looks_like_problem(what)) {
    Problem p = parse_problem(what);
    if (p.pass != Pass::fwd)
      throw Error("analyze: dir=" + std::string(name(p.pass)) +
                  ": the model is of the forward pass (--training adds what a training step keeps)");
    if (a.get("batch")) p = with_batch(p, a.integer("batch", 1));
    if (dtype_flag) p.dt = dt;
    print_problem_model(p, a.on("json"), a.on("training"), opt);
    return 0;
  }
  const Graph net = load_network(what, a.integer("batch", 1), dt);
  print_network(net, a.on("json"), a.on("training"), opt);
  return 0;
}

// A case's verdict without running what need not run: unsupported pairs (expand()
// found the reason) and problems over --max-macs.
Verdict check_case(const bench::Case& c, const CheckArgs& args) {
  Verdict v;
  if (!c.unsupported.empty()) {
    v.status = Status::unsupported;
    v.reason = c.unsupported;
  } else if (const int64_t macs = model(c.problem).macs; args.max_macs && macs > args.max_macs) {
    v.status = Status::not_run;
    v.reason =
        "the problem has " + with_commas(macs) + " MACs, more than --max-macs " + with_commas(args.max_macs);
  } else {
    v = check_kernel(*c.kernel, c.problem, args.seed, Context{c.threads}, args.reference_macs);
  }
  return v;
}

int cmd_check(const std::vector<std::string>& argv) {
  if (asks_for_graph(argv)) return check_graph_command(argv);
  // Everything is parsed and validated, and the cases expanded, before the first line of output.
  const CheckArgs args = parse_check_args(argv);
  const std::vector<bench::Case> cases = bench::expand(args.spec);
  StatusCounts counts;
  for (const bench::Case& c : cases) {
    const Verdict v = check_case(c, args);
    counts.add(v.status);
    std::printf("%-13s %-24s %s\n              %s\n", std::string(name(v.status)).c_str(),
                c.kernel->info.id.c_str(), print(c.problem).c_str(), v.reason.c_str());
    if (v.status == Status::failed) std::printf("              repro: %s\n", v.repro.c_str());
    std::fflush(stdout);
  }
  std::printf("check: %s\n", counts.summary().c_str());
  return counts.of[int(Status::failed)] ? 1 : 0;
}

// The usage text of one command (its block of kUsage or kRunUsage), "" if unknown.
std::string usage_of(const std::string& command) {
  std::istringstream all(std::string(kUsage) + kRunUsage + kGraphUsage);
  std::string block;
  bool inside = false;
  for (std::string line; std::getline(all, line);) {
    // A command's block starts with its name, indented by two; its options and
    // description follow, indented further.
    const bool starts_block = line.size() > 2 && line.rfind("  ", 0) == 0 && line[2] != ' ';
    if (starts_block) inside = line.compare(2, command.size() + 1, command + " ") == 0;
    if (inside) block += line + "\n";
  }
  return block;
}

std::string version() {
  return std::string("layerbench ") + LB_VERSION + " (commit " + lb::bench::kGitCommit + "; " +
         lb::bench::kBuildDescription + "; results format " + lb::bench::kFormatVersion + ")";
}

}  // namespace
}  // namespace lb::cli

int main(int argc, char** argv) {
  using namespace lb::cli;
  if (argc < 2) {
    std::fputs("layerbench: expected a command: list, analyze, check, run, merge or help\n", stderr);
    return 2;
  }
  const std::string command = argv[1];
  // libgomp and glibc's malloc read their settings when they are loaded, before main(), so
  // a setting takes a fresh start of this program (on failure it carries on without).
  bool restart = false;
  if (command == "run" && !std::getenv("GOMP_SPINCOUNT")) {
    // GNU OpenMP's idle workers spin for a while after a parallel region (oneDNN's), and
    // that spinning would be counted in the CPU utilisation of the next, single-threaded
    // case; 10,000 spins cost no measurable speed.
    setenv("GOMP_SPINCOUNT", "10000", 1);
    restart = true;
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if ((command == "run" || command == "check") &&
      !(tunables && std::string_view(tunables).find("glibc.malloc.hugetlb") != std::string_view::npos)) {
    // Large allocations (a kernel's packed weights and workspaces, oneDNN's, the reference's
    // outputs) asked for transparent huge pages, as our tensors are (kernels/tensor.cpp):
    // each case allocates anew, and taking those pages 4 KiB at a time was half of a case's
    // set-up, most of it system time, on a 2-core VM whose page faults go through the
    // hypervisor (AlexNet at batch 16 on the Zen 5 VM: set-up 10.0 -> 4.9 s, run 21 -> 13.5 s).
    const std::string value =
        std::string(tunables && *tunables ? tunables + std::string(":") : "") + "glibc.malloc.hugetlb=1";
    setenv("GLIBC_TUNABLES", value.c_str(), 1);
    restart = true;
  }
  if (restart) execv("/proc/self/exe", argv);
  const std::vector<std::string> rest(argv + 2, argv + argc);
  try {
    if (command == "help" || command == "--help" || command == "-h") {
      std::fputs(kUsage, stdout);
      std::fputs(lb::cli::kRunUsage, stdout);
      std::fputs(lb::cli::kGraphUsage, stdout);
      std::fputs(kUsageFooter, stdout);
      return 0;
    }
    if (command == "--version" || command == "version") {
      std::printf("%s\n", version().c_str());
      return 0;
    }
    if (!rest.empty() && (rest[0] == "--help" || rest[0] == "-h")) {
      const std::string usage = usage_of(command);
      if (usage.empty()) throw lb::Error("unknown command '" + command + "' (see layerbench help)");
      std::printf("usage: layerbench %s%s", usage.substr(2).c_str(), kUsageFooter);
      return 0;
    }
    if (command == "list") return cmd_list(rest);
    if (command == "analyze") return cmd_analyze(rest);
    if (command == "check") return cmd_check(rest);
    if (command == "run")
      return asks_for_graph(rest) ? run_graph_command(rest) : lb::bench::run_command(rest);
    if (command == "merge") return lb::bench::merge_command(rest);
    throw lb::Error("unknown command '" + command + "' (expected list, analyze, check, run, merge or help)");
  } catch (const lb::Error& e) {
    std::fprintf(stderr, "layerbench: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "layerbench: out of memory\n");
    return 2;
  }
}
