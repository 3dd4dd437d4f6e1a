// Generated at build time by bench/git_info.cmake (git_info.cpp in the build folder).
#pragma once

namespace lb::bench {
extern const char* const kGitCommit;         // "abc1234" or "abc1234-dirty"; "unknown" outside git
extern const char* const kBuildDescription;  // build type and compile flags
}  // namespace lb::bench
