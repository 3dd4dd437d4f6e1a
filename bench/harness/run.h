// layerbench run / layerbench merge.
#pragma once

#include <string>
#include <vector>

namespace lb::bench {

int run_command(const std::vector<std::string>& argv);
int merge_command(const std::vector<std::string>& argv);

}  // namespace lb::bench
