#include "kernels/problem.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <sstream>

#include "kernels/common.h"

namespace lb {
namespace {

constexpr int64_t kMaxValue = 2147483647;  // every key fits an int; products are checked below

// One integer key of an op: its name, where it lives, its lower bound, and whether a
// problem line must give it.
template <class Shape>
struct Key {
  std::string_view key;
  int64_t Shape::*member;
  int64_t min;
  bool required;
};

constexpr Key<Dense> kDenseKeys[] = {
    {"mb", &Dense::mb, 1, true}, {"ic", &Dense::ic, 1, true}, {"oc", &Dense::oc, 1, true}};

// Order is the canonical print order.
constexpr Key<Conv2d> kConvKeys[] = {
    {"mb", &Conv2d::mb, 1, true},  {"ic", &Conv2d::ic, 1, true},  {"ih", &Conv2d::ih, 1, true},
    {"iw", &Conv2d::iw, 1, true},  {"oc", &Conv2d::oc, 1, true},  {"kh", &Conv2d::kh, 1, true},
    {"kw", &Conv2d::kw, 1, true},  {"sh", &Conv2d::sh, 1, false}, {"sw", &Conv2d::sw, 1, false},
    {"ph", &Conv2d::ph, 0, false}, {"pw", &Conv2d::pw, 0, false}, {"dh", &Conv2d::dh, 1, false},
    {"dw", &Conv2d::dw, 1, false}, {"g", &Conv2d::g, 1, false}};

constexpr Key<Lstm> kLstmKeys[] = {{"mb", &Lstm::mb, 1, true},
                                   {"t", &Lstm::t, 1, true},
                                   {"ic", &Lstm::ic, 1, true},
                                   {"hc", &Lstm::hc, 1, true},
                                   {"l", &Lstm::l, 1, false}};

bool valid_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) return false;
  return true;
}

template <class Shape, size_t N>
std::string key_list(const Key<Shape> (&keys)[N], bool required_only) {
  std::string out;
  for (const auto& k : keys)
    if (!required_only || k.required) out += (out.empty() ? "" : " ") + std::string(k.key);
  return out;
}

// Fills `shape` from the key=value pairs; returns which keys were given.
template <class Shape, size_t N>
std::map<std::string, bool> parse_keys(std::string_view op, const Key<Shape> (&keys)[N],
                                       std::map<std::string, std::string, std::less<>>& kv, Shape& shape) {
  std::map<std::string, bool> given;
  for (const auto& k : keys) {
    auto it = kv.find(k.key);
    if (it == kv.end()) {
      if (k.required)
        throw Error(std::string(op) + ": missing " + std::string(k.key) +
                    "= (required: " + key_list(keys, true) + ")");
      continue;
    }
    const std::string& v = it->second;
    const std::string tok = std::string(k.key) + "=" + v;
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    const bool whole = !v.empty() && end == v.data() + v.size();
    if (whole && (ec == std::errc::result_out_of_range || value > kMaxValue)) {
      if (v[0] == '-') throw Error(std::string(op) + ": " + tok + ": must be >= " + std::to_string(k.min));
      throw Error(std::string(op) + ": " + tok + ": must be <= " + std::to_string(kMaxValue));
    }
    if (ec != std::errc() || !whole) throw Error(std::string(op) + ": " + tok + ": expected an integer");
    if (value < k.min) throw Error(std::string(op) + ": " + tok + ": must be >= " + std::to_string(k.min));
    shape.*k.member = value;
    given[std::string(k.key)] = true;
    kv.erase(it);
  }
  if (!kv.empty()) {
    const auto& [key, value] = *kv.begin();
    throw Error(std::string(op) + ": '" + key + "=" + value + "': unknown key; expected one of " +
                key_list(keys, false) + " dt relu name");
  }
  return given;
}

void check_size(std::string_view op, long double elements) {
  if (elements > 0x1p62L)
    throw Error(std::string(op) + ": problem too large (more than 2^62 elements or MACs)");
}

void validate(Conv2d& c, const std::map<std::string, bool>& given) {
  if (!given.count("sw")) c.sw = c.sh;
  if (!given.count("pw")) c.pw = c.ph;
  if (!given.count("dw")) c.dw = c.dh;
  if (c.ic % c.g != 0 || c.oc % c.g != 0)
    throw Error("conv2d: g=" + std::to_string(c.g) + ": must divide ic=" + std::to_string(c.ic) +
                " and oc=" + std::to_string(c.oc));
  const long double span_h = (long double)(c.kh - 1) * c.dh + 1;
  const long double span_w = (long double)(c.kw - 1) * c.dw + 1;
  if (span_h > c.ih + 2.0L * c.ph)
    throw Error("conv2d: kh=" + std::to_string(c.kh) + ": dilated filter (" +
                std::to_string((int64_t)span_h) +
                ") is larger than the padded input (ih + 2*ph = " + std::to_string(c.ih + 2 * c.ph) + ")");
  if (span_w > c.iw + 2.0L * c.pw)
    throw Error("conv2d: kw=" + std::to_string(c.kw) + ": dilated filter (" +
                std::to_string((int64_t)span_w) +
                ") is larger than the padded input (iw + 2*pw = " + std::to_string(c.iw + 2 * c.pw) + ")");
  const long double mb = c.mb, ic = c.ic, oc = c.oc;
  check_size("conv2d", mb * ic * c.ih * c.iw);
  check_size("conv2d", mb * oc * c.oh() * c.ow() * (ic / c.g) * c.kh * c.kw);
}

}  // namespace

std::string_view name(Op op) {
  switch (op) {
    case Op::dense:
      return "dense";
    case Op::conv2d:
      return "conv2d";
    case Op::lstm:
      return "lstm";
  }
  return "?";
}

Op parse_op(std::string_view token) {
  for (Op op : kAllOps)
    if (name(op) == token) return op;
  throw Error("'" + std::string(token) + "': unknown op; expected dense, conv2d or lstm");
}

std::string_view name(Relu r) {
  switch (r) {
    case Relu::none:
      return "none";
    case Relu::separate:
      return "separate";
    case Relu::inplace:
      return "inplace";
    case Relu::fused:
      return "fused";
  }
  return "?";
}

Relu parse_relu(std::string_view token) {
  for (Relu r : kAllRelus)
    if (name(r) == token) return r;
  throw Error("relu '" + std::string(token) + "': expected one of none separate inplace fused");
}

int64_t Problem::batch() const {
  return std::visit([](const auto& s) { return s.mb; }, shape);
}

Problem parse_problem(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::string op_token;
  if (!(in >> op_token)) throw Error("empty problem line; expected '<op> key=value ...'");
  Problem p;
  const Op op = parse_op(op_token);
  std::map<std::string, std::string, std::less<>> kv;
  for (std::string tok; in >> tok;) {
    const size_t eq = tok.find('=');
    if (eq == std::string::npos || eq == 0) throw Error(op_token + ": '" + tok + "': expected key=value");
    std::string key = tok.substr(0, eq);
    if (kv.count(key)) throw Error(op_token + ": " + tok + ": " + key + " given twice");
    kv.emplace(std::move(key), tok.substr(eq + 1));
  }
  if (auto it = kv.find("dt"); it != kv.end()) {
    try {
      p.dt = parse_dtype(it->second);
    } catch (const Error& e) {
      throw Error(op_token + ": dt=" + it->second + ": expected one of f32 tf32 f16 bf16 i8 f8");
    }
    kv.erase(it);
  }
  if (auto it = kv.find("relu"); it != kv.end()) {
    try {
      p.relu = parse_relu(it->second);
    } catch (const Error& e) {
      throw Error(op_token + ": relu=" + it->second + ": expected one of none separate inplace fused");
    }
    kv.erase(it);
  }
  if (auto it = kv.find("name"); it != kv.end()) {
    if (!valid_name(it->second))
      throw Error(op_token + ": name=" + it->second + ": expected letters, digits, '_', '.' or '-'");
    p.name = it->second;
    kv.erase(it);
  }
  switch (op) {
    case Op::dense: {
      Dense d;
      parse_keys("dense", kDenseKeys, kv, d);
      check_size("dense", (long double)d.mb * d.ic * d.oc);
      p.shape = d;
      break;
    }
    case Op::conv2d: {
      Conv2d c;
      auto given = parse_keys("conv2d", kConvKeys, kv, c);
      validate(c, given);
      p.shape = c;
      break;
    }
    case Op::lstm: {
      Lstm s;
      parse_keys("lstm", kLstmKeys, kv, s);
      const long double width = std::max(s.ic, s.hc);
      check_size("lstm", (long double)s.t * s.mb * 4 * s.hc * (width + s.hc) * s.l);
      p.shape = s;
      break;
    }
  }
  return p;
}

std::string print(const Problem& p) {
  std::string out(name(p.op()));
  auto put = [&out](std::string_view key, int64_t v) {
    out += ' ';
    out += key;
    out += '=';
    out += std::to_string(v);
  };
  switch (p.op()) {
    case Op::dense:
      for (const auto& k : kDenseKeys)
        put(k.key, p.dense().*k.member);
      break;
    case Op::conv2d: {
      const Conv2d& c = p.conv();
      for (const auto& k : kConvKeys) {
        const int64_t v = c.*k.member;
        // Keys equal to their default are left out, except the ones a reader looks for.
        if ((k.key == "sw" && v == c.sh) || (k.key == "pw" && v == c.ph) || (k.key == "dh" && v == 1) ||
            (k.key == "dw" && v == c.dh))
          continue;
        put(k.key, v);
      }
      break;
    }
    case Op::lstm:
      for (const auto& k : kLstmKeys)
        put(k.key, p.lstm().*k.member);
      break;
  }
  out += " dt=" + std::string(name(p.dt)) + " relu=" + std::string(name(p.relu));
  if (!p.name.empty()) out += " name=" + p.name;
  return out;
}

Problem with_batch(Problem p, int64_t mb) {
  std::visit([mb](auto& s) { s.mb = mb; }, p.shape);
  // A batch from a flag or a sweep gets the checks a problem line gets (mb <= 2^31 - 1,
  // at most 2^62 elements and MACs), which model() and make_tensors() rely on: without
  // them `analyze LINE --batch 9223372036854775807` overflowed model()'s int64 MACs.
  // Valid problems round-trip (parse(print(p)) == p), so this changes nothing else.
  return parse_problem(print(p));
}

std::vector<int64_t> output_dims(const Problem& p) {
  switch (p.op()) {
    case Op::dense:
      return {p.dense().mb, p.dense().oc};
    case Op::conv2d:
      return {p.conv().mb, p.conv().oc, p.conv().oh(), p.conv().ow()};
    case Op::lstm:
      return {p.lstm().t, p.lstm().mb, p.lstm().hc};
  }
  return {};
}

std::string short_name(const Problem& p) {
  if (!p.name.empty()) return p.name;
  std::string line = print(p);
  std::string out;
  std::istringstream in(line);
  std::string tok;
  in >> tok;  // the op is already in the kernel id
  while (in >> tok) {
    if (tok.rfind("dt=", 0) == 0 || tok.rfind("relu=", 0) == 0) continue;
    tok.erase(tok.find('='), 1);
    out += tok;
  }
  return out;
}

}  // namespace lb
