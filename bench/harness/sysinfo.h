// What a result needs to be read later: the machine, the build and the libraries.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace lb::bench {

std::string hostname();
std::string cpu_model();  // /proc/cpuinfo "model name"
std::string cpu_isa();    // the vector ISA extensions this CPU offers that kernels use
int cpu_cores();          // logical CPUs this process may run on

// Key/value pairs for the JSON context: machine, compiler, flags, git commit, libraries.
std::vector<std::pair<std::string, std::string>> build_context();

}  // namespace lb::bench
