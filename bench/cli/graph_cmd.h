// `layerbench check --graph` and `layerbench run --graph`: whole networks run by one
// backend each (kernels/graph_session.h), verified against the reference graph, timed as
// one case, and their host memory measured beside liveness's prediction; --batch auto
// doubles the batch until the next would not fit.
#pragma once

#include <string>
#include <vector>

namespace lb::cli {

bool asks_for_graph(const std::vector<std::string>& argv);  // --graph given
int check_graph_command(const std::vector<std::string>& argv);
int run_graph_command(const std::vector<std::string>& argv);
extern const char* const kGraphUsage;

}  // namespace lb::cli
