#include "kernels/problem.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <sstream>

#include "kernels/common.h"
#include "kernels/ops/traits.h"

namespace lb {
namespace {

bool valid_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) return false;
  return true;
}

// The most elements one argument may hold: 2^48 (a petabyte of f32). Far beyond any
// machine, and far enough from int64's 2^63 that the byte size (up to 8 per element), a
// kernel's padded or per-thread copies and the sums over it cannot overflow — the op's
// check_size bounds the MACs (2^62) but, before this, not each tensor: `dense
// mb=2147483647 ic=2147483647 oc=1` passed with an x of 2^62 elements, 2^64 bytes.
constexpr long double kMaxTensorElements = 0x1p48L;

void check_tensors(const Problem& p, std::string_view op) {
  const LargestArg largest = largest_arg(p);
  if (largest.elements > kMaxTensorElements)
    throw Error(std::string(op) + ": problem too large: " + std::string(name(largest.arg)) + " has " +
                power_of_two(largest.elements) + " elements, more than 2^48");
}

}  // namespace

std::string_view name(Op op) {
  return traits(op).name;
}

Op parse_op(std::string_view token) {
  for (Op op : kAllOps)
    if (name(op) == token) return op;
  std::string expected;  // "dense, conv2d or lstm"
  for (size_t i = 0; i < std::size(kAllOps); ++i) {
    if (i > 0) expected += i + 1 == std::size(kAllOps) ? " or " : ", ";
    expected += name(kAllOps[i]);
  }
  throw Error("'" + std::string(token) + "': unknown op; expected " + expected);
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
    case Relu::relu6:
      return "relu6";
  }
  return "?";
}

Relu parse_relu(std::string_view token) {
  for (Relu r : kAllRelus)
    if (name(r) == token) return r;
  if (token == name(Relu::relu6)) return Relu::relu6;
  throw Error("relu '" + std::string(token) + "': expected one of none separate inplace fused relu6");
}

std::string_view name(Pass pass) {
  switch (pass) {
    case Pass::fwd:
      return "fwd";
    case Pass::fwd_train:
      return "fwd_train";
    case Pass::bwd_d:
      return "bwd_d";
    case Pass::bwd_w:
      return "bwd_w";
    case Pass::bwd:
      return "bwd";
    case Pass::train:
      return "train";
  }
  return "?";
}

std::string pass_names() {
  std::string out;
  for (Pass pass : kAllPasses)
    out += (out.empty() ? "" : " ") + std::string(name(pass));
  return out;
}

Pass parse_pass(std::string_view token) {
  for (Pass pass : kAllPasses)
    if (name(pass) == token) return pass;
  throw Error("dir '" + std::string(token) + "': expected one of " + pass_names());
}

Problem with_pass(Problem p, Pass pass) {
  const OpTraits& t = traits(p.op());
  if (std::find(t.passes.begin(), t.passes.end(), pass) == t.passes.end())
    throw Error(std::string(t.name) + ": dir=" + std::string(name(pass)) + ": " + std::string(t.no_pass));
  p.pass = pass;
  return p;
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
  KeyValues kv;
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
      throw Error(op_token + ": relu=" + it->second + ": expected one of none separate inplace fused relu6");
    }
    kv.erase(it);
  }
  Pass pass = Pass::fwd;
  if (auto it = kv.find("dir"); it != kv.end()) {
    try {
      pass = parse_pass(it->second);
    } catch (const Error&) {
      throw Error(op_token + ": dir=" + it->second + ": expected one of " + pass_names());
    }
    kv.erase(it);
  }
  if (auto it = kv.find("name"); it != kv.end()) {
    if (!valid_name(it->second))
      throw Error(op_token + ": name=" + it->second + ": expected letters, digits, '_', '.' or '-'");
    p.name = it->second;
    kv.erase(it);
  }
  traits(op).parse(kv, p);
  check_tensors(p, op_token);
  return with_pass(std::move(p), pass);
}

std::string print(const Problem& p) {
  std::string out(name(p.op()));
  traits(p.op()).print(p, out);
  out += " dt=" + std::string(name(p.dt)) + " relu=" + std::string(name(p.relu));
  if (p.pass != Pass::fwd) out += " dir=" + std::string(name(p.pass));
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
  return traits(p.op()).output.dims(p);
}

std::string short_name(const Problem& p) {
  if (!p.name.empty()) return p.name;
  std::string line = print(p);
  std::string out;
  std::istringstream in(line);
  std::string tok;
  in >> tok;  // the op is already in the kernel id
  while (in >> tok) {
    if (tok.rfind("dt=", 0) == 0 || tok.rfind("relu=", 0) == 0 || tok.rfind("dir=", 0) == 0) continue;
    tok.erase(tok.find('='), 1);
    out += tok;
  }
  return out;
}

}  // namespace lb
