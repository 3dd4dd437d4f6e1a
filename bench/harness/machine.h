// Which machine a result comes from: a name that history, compare and the dashboard
// group by, and the facts that explain a change of speed on the same name (CPU model
// and signature, microcode, kernel, frequency governor, turbo, SMT).
//
// The name is --machine NAME, else $LB_MACHINE, else "host-" and 8 hex digits of a
// stable hash of the machine id (/etc/machine-id), the CPU model, the CPU's signature
// (vendor, family, model, stepping), the core count and the GPU model — so two hosts
// that both call themselves "vm" stay apart, and a host keeps its name across reboots
// and runs. The signature is in the hash because the model name is not enough: the
// development VMs are one disk image (one machine id) on AMD Zen 3, Zen 4 and Zen 5
// hosts that all read "AMD EPYC" (a Zen 3 and a Zen 4 VM both hashed to 4949a817 before).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace lb::bench {

// The results files' layout version, in every context (layerbench_format_version):
// 2 = measured cases only in "benchmarks", the others in "layerbench_not_measured".
inline constexpr const char* kFormatVersion = "2";

struct Machine {
  std::string name;  // what results are grouped by
  std::string id;    // the hash behind the default name (16 hex digits)
  // Context key → value: layerbench_machine, layerbench_machine_id, and the facts above
  // where this host lets them be read.
  std::vector<std::pair<std::string, std::string>> facts;
};

// `requested`: --machine's value, or "" for $LB_MACHINE or the default.
Machine identify_machine(const std::string& requested, const std::string& gpu_model);

// A machine name is 1 to 64 letters, digits, '.', '_' and '-' (it names a folder of
// history): checks --machine's value (`from`) and $LB_MACHINE, throwing lb::Error naming
// the bad one, before a run touches any file.
void check_machine_name(const std::string& name, const std::string& from);

}  // namespace lb::bench
