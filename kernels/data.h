// Problems and networks kept as data: suite files (bench/suites/NAME.txt, one canonical
// problem line each) and network files (bench/networks/NAME.txt, a graph's nodes in order:
// kernels/graph.h).
// In both, '#' starts a comment and blank lines are ignored; every error cites
// file:line and the token.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/graph.h"
#include "kernels/problem.h"

namespace lb {

// Where bench/suites and bench/networks live: $LAYERBENCH_DATA if set, else the source
// tree this binary was built from.
std::string data_dir();

// NAME -> <data_dir>/<kind>/NAME.txt; a NAME containing '/' or ending in .txt is a path.
// Throws "unknown suite 'x' (available: a b c)".
std::string find_data(std::string_view kind, std::string_view name);
std::vector<std::string> list_data(std::string_view kind);
std::string read_file(const std::string& path);

std::vector<Problem> parse_suite(std::string_view text, std::string_view file);
std::vector<Problem> load_suite(std::string_view name);

// The network file grammar (see bench/networks/README.md):
//   input c=3 h=224 w=224 | input c=4096 | input t=35 (a sequence of token ids)
//   <name> <kind> [in=<layer>[,<layer>...]] key=value ...
// A layer reads the previous line's output unless in= names earlier layers ("input": the
// network's input). Op layers take the keys of a problem line without the ones their
// input determines (mb and the input sizes, as the op's OpTraits derive them); given
// anyway, they must agree.
Graph parse_network(std::string_view text, std::string_view file, int64_t batch, DType dt);
Graph load_network(std::string_view name, int64_t batch, DType dt);

}  // namespace lb
