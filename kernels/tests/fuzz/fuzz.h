// What every parser fuzz target checks beyond what the sanitizers check (memory errors,
// leaks, undefined behaviour) and libFuzzer's own -timeout and -rss_limit_mb (hangs,
// runaway memory): a rejection is an lb::Error whose what() is one non-empty line that
// starts where the README says it does; any other exception is a finding. A finding
// aborts, which libFuzzer reports as a crash and saves the input that caused it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/common.h"

namespace lb::fuzz {

[[noreturn]] inline void finding(const std::string& why) {
  std::fprintf(stderr, "fuzz finding: %s\n", why.c_str());
  std::abort();
}

// Runs `parse`: its result, or nullopt when it rejected the input properly — an lb::Error
// with a one-line, non-empty message that begins with `prefix`.
template <class Parse>
auto accepted(std::string_view prefix, Parse&& parse) -> std::optional<decltype(parse())> {
  try {
    return parse();
  } catch (const Error& e) {
    const std::string_view what = e.what();
    if (what.empty()) finding("an lb::Error with an empty message");
    if (what.find_first_of("\r\n") != std::string_view::npos)
      finding("an lb::Error of more than one line: " + std::string(what));
    if (!what.starts_with(prefix))
      finding("an lb::Error that does not start with '" + std::string(prefix) + "': " + std::string(what));
  } catch (const std::exception& e) {
    finding(std::string("an exception that is not an lb::Error: ") + e.what());
  } catch (...) {
    finding("an exception that is not a std::exception");
  }
  return std::nullopt;
}

// Runs `check` on something the parser accepted: it must not throw at all.
template <class Check>
void must_not_throw(std::string_view what, Check&& check) {
  try {
    check();
  } catch (const std::exception& e) {
    finding(std::string(what) + " threw: " + e.what());
  } catch (...) {
    finding(std::string(what) + " threw something that is not a std::exception");
  }
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace lb::fuzz
