// The integer keys of a problem line, declared once per op as a table (dense.cpp,
// conv2d.cpp, lstm.cpp) and parsed and printed here from it: the op's traits call
// parse_keys and print_keys with their table, so a key is one line of that table.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "kernels/common.h"

namespace lb {

// The key=value tokens of a line not yet consumed (a parser erases what it takes).
using KeyValues = std::map<std::string, std::string, std::less<>>;

// One integer key of an op: its name, where it lives, its lower bound, whether a problem
// line must give it, and its default and printing rule. Order in a table is the
// canonical print order.
template <class Shape>
struct Key {
  std::string_view key;
  int64_t Shape::*member;
  int64_t min = 1;
  bool required = true;
  // An optional key's default: another key's value (sw defaults to sh), which must come
  // earlier in the table; else the member's initial value in Shape{}.
  int64_t Shape::*default_from = nullptr;
  // Whether print() writes the key when it equals its default: the ones a reader looks
  // for (sh=1, g=1) are written, the ones that follow another (sw=sh) are not.
  bool print_default = true;
};

// "mb ic oc": the keys of a table, or only its required ones (for error messages).
template <class Shape>
std::string key_list(std::span<const Key<Shape>> keys, bool required_only) {
  std::string out;
  for (const auto& k : keys) {
    if (!required_only || k.required) {
      if (!out.empty()) out += ' ';
      out += k.key;
    }
  }
  return out;
}

// The integer of a `key=value` token, checked against [min, 2^31 - 1]; throws lb::Error
// naming the op and the token.
int64_t parse_value(std::string_view op, std::string_view key, const std::string& value, int64_t min);

// Takes the table's keys out of kv into a Shape, defaults applied; throws lb::Error on a
// missing, malformed or out-of-range value, or on a key left over in kv.
template <class Shape>
Shape parse_keys(std::string_view op, std::span<const Key<Shape>> keys, KeyValues& kv) {
  Shape shape;
  for (const auto& k : keys) {
    auto it = kv.find(k.key);
    if (it == kv.end()) {
      if (k.required)
        throw Error(std::string(op) + ": missing " + std::string(k.key) +
                    "= (required: " + key_list(keys, true) + ")");
      if (k.default_from) shape.*k.member = shape.*k.default_from;
      continue;
    }
    shape.*k.member = parse_value(op, k.key, it->second, k.min);
    kv.erase(it);
  }
  if (!kv.empty()) {
    const auto& [key, value] = *kv.begin();
    throw Error(std::string(op) + ": '" + key + "=" + value + "': unknown key; expected one of " +
                key_list(keys, false) + " dt relu name");
  }
  return shape;
}

// Appends " key=value" for each key of the table, in its order, leaving out the keys
// that equal their default and are not printed then.
template <class Shape>
void print_keys(std::span<const Key<Shape>> keys, const Shape& shape, std::string& out) {
  for (const auto& k : keys) {
    const int64_t v = shape.*k.member;
    const int64_t default_value = k.default_from ? shape.*k.default_from : Shape{}.*k.member;
    if (!k.print_default && v == default_value) continue;
    out += ' ';
    out += k.key;
    out += '=';
    out += std::to_string(v);
  }
}

// Throws "<op>: problem too large" above 2^62 elements or MACs, which keeps every
// tensor size and the model's int64 sums from overflowing.
void check_size(std::string_view op, long double elements);

}  // namespace lb
