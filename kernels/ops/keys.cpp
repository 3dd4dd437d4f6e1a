#include "kernels/ops/keys.h"

#include <charconv>

namespace lb {

namespace {
constexpr int64_t kMaxValue = 2147483647;  // every key fits an int; products are checked by check_size
}  // namespace

int64_t parse_value(std::string_view op, std::string_view key, const std::string& v, int64_t min) {
  const std::string tok = std::string(op) + ": " + std::string(key) + "=" + v;
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
  const bool whole = !v.empty() && end == v.data() + v.size();
  if (whole && (ec == std::errc::result_out_of_range || value > kMaxValue)) {
    if (v[0] == '-') throw Error(tok + ": must be >= " + std::to_string(min));
    throw Error(tok + ": must be <= " + std::to_string(kMaxValue));
  }
  if (ec != std::errc() || !whole) throw Error(tok + ": expected an integer");
  if (value < min) throw Error(tok + ": must be >= " + std::to_string(min));
  return value;
}

void check_size(std::string_view op, long double elements) {
  if (elements > 0x1p62L)
    throw Error(std::string(op) + ": problem too large (more than 2^62 elements or MACs)");
}

}  // namespace lb
