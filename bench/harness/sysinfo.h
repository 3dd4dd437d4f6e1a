// What a result needs to be read later: the machine, the build and the libraries.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace lb::bench {

std::string hostname();
std::string cpu_model();  // /proc/cpuinfo "model name"
// "<vendor_id> family F model M stepping S" from /proc/cpuinfo, "" where it cannot be
// read: what tells apart CPUs with one model name (a VM reads "AMD EPYC" on Zen 3, 4 and 5).
std::string cpu_signature();
// The value of a "key : value" line of /proc/cpuinfo (the first CPU's), "" if absent; the
// key is matched whole ("model" is not "model name").
std::string cpuinfo_field(const std::string& key);
std::string cpu_isa();  // the vector ISA extensions this CPU offers that kernels use
int cpu_cores();        // logical CPUs this process may run on

// Data cache capacities of CPU 0 in bytes, as Linux describes them
// (/sys/devices/system/cpu/cpu0/cache; glibc's sysconf as a fallback, which on some VMs
// sums the L3 over all the host's dies). 0 when unknown. The last level is the largest
// level present (L3, else L2).
struct CacheSizes {
  size_t l1d = 0, l2 = 0, last_level = 0;
};
const CacheSizes& cache_sizes();

// Key/value pairs for the JSON context: machine, compiler, flags, git commit, libraries,
// then what note_context() recorded.
std::vector<std::pair<std::string, std::string>> build_context();

// Records a fact about this run's environment found while it was set up (threads beyond
// the cores, the peaks cache actually used), for build_context() to add; a key noted
// again takes the new value.
void note_context(const std::string& key, const std::string& value);

// Thread counts above cpu_cores(): one warning line on stderr, and the context's
// layerbench_threads_oversubscribed ("64 threads on 2 cores"). True when any count is.
bool check_oversubscription(const std::vector<int>& threads);

}  // namespace lb::bench
