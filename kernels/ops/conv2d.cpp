// conv2d: cross-correlation in NCHW, standard, grouped or depthwise; everything
// layerbench knows about it (the shape: conv2d.h).
#include "kernels/ops/conv2d.h"

#include <algorithm>
#include <utility>

#include "kernels/ops/traits.h"

namespace lb {
namespace {

constexpr std::string_view kName = "conv2d";

constexpr Key<Conv2d> kKeys[] = {
    {"mb", &Conv2d::mb},
    {"ic", &Conv2d::ic},
    {"ih", &Conv2d::ih},
    {"iw", &Conv2d::iw},
    {"oc", &Conv2d::oc},
    {"kh", &Conv2d::kh},
    {"kw", &Conv2d::kw},
    {.key = "sh", .member = &Conv2d::sh, .required = false},
    {.key = "sw",
     .member = &Conv2d::sw,
     .required = false,
     .default_from = &Conv2d::sh,
     .print_default = false},
    {.key = "ph", .member = &Conv2d::ph, .min = 0, .required = false},
    {.key = "pw",
     .member = &Conv2d::pw,
     .min = 0,
     .required = false,
     .default_from = &Conv2d::ph,
     .print_default = false},
    {.key = "dh", .member = &Conv2d::dh, .required = false, .print_default = false},
    {.key = "dw",
     .member = &Conv2d::dw,
     .required = false,
     .default_from = &Conv2d::dh,
     .print_default = false},
    {.key = "g", .member = &Conv2d::g, .required = false}};

// The checks beyond each key's own range: groups divide the channels, the dilated filter
// fits the padded input, and the tensors and MACs stay within check_size.
void validate(const Conv2d& c) {
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
  check_size(kName, mb * ic * c.ih * c.iw);
  check_size(kName, mb * oc * c.oh() * c.ow() * (ic / c.g) * c.kh * c.kw);
  // The padded image of one sample, which kernels copy the input into (conv2d.cpu.default's
  // indirect GEMM): with a large stride its padding need not show in the output's size,
  // and 1 × (2^31 - 1 + 2·ph)² floats overflowed the copy's byte count.
  const long double padded = ic * (c.ih + 2.0L * c.ph) * (c.iw + 2.0L * c.pw);
  if (padded > 0x1p48L)
    throw Error("conv2d: ph=" + std::to_string(c.ph) + " pw=" + std::to_string(c.pw) +
                ": the padded input has " + power_of_two(padded) + " elements per sample, more than 2^48");
}

// Products per output value: one input channel group times the filter window.
int64_t taps(const Conv2d& c) {
  return c.ic / c.g * c.kh * c.kw;
}

// Σ floor((a·i + b) / m) for i in [0, n), with a, b ≥ 0 and m > 0, in O(log) steps (the
// classic "floor sum": the lattice points under a line, counted by swapping the axes).
__int128 floor_sum(__int128 n, __int128 m, __int128 a, __int128 b) {
  __int128 sum = 0;
  while (n > 0) {
    sum += a / m * (n * (n - 1) / 2) + b / m * n;
    a %= m;
    b %= m;
    const __int128 top = a * n + b;  // the line's height at i = n
    if (top < m) break;
    n = top / m;
    b = top % m;
    std::swap(m, a);
  }
  return sum;
}

// Along one axis: the (output position o < outs, filter tap r < taps) pairs whose input
// position o·stride − pad + r·dilation is inside [0, in). Pairs with o·stride + r·dilation ≤ t,
// at(t), counted per tap r: min(outs, floor((t − r·dilation) / stride) + 1) where positive, the
// taps that reach every output in one product and the rest as one floor sum. Closed form:
// a line may give 2^31 − 1 outputs and taps, too many to count one by one.
int64_t taps_on_input(int64_t outs, int64_t taps, int64_t stride, int64_t dilation, int64_t pad, int64_t in) {
  auto at = [&](__int128 t) -> __int128 {
    if (t < 0) return 0;
    const __int128 reach = std::min<__int128>(taps, t / dilation + 1);  // taps r with r·dilation ≤ t
    const __int128 last = t - __int128(outs - 1) * stride;  // every output where r·dilation ≤ last
    const __int128 every = last < 0 ? 0 : std::min<__int128>(reach, last / dilation + 1);
    const __int128 n = reach - every;  // taps r in [every, reach): floor((t − r·dilation) / stride) + 1
    return every * outs + floor_sum(n, stride, dilation, t - (reach - 1) * dilation) + n;
  };
  return int64_t(at(__int128(pad) + in - 1) - at(__int128(pad) - 1));
}

}  // namespace

// The products on the input per output channel of one sample, over its groups' channels.
int64_t conv2d_taps_on_input(const Conv2d& c) {
  return c.ic / c.g * taps_on_input(c.oh(), c.kh, c.sh, c.dh, c.ph, c.ih) *
         taps_on_input(c.ow(), c.kw, c.sw, c.dw, c.pw, c.iw);
}

const OpTraits& conv2d_traits() {
  static const OpTraits traits{
      .op = Op::conv2d,
      .name = kName,
      .parse =
          [](KeyValues& kv, Problem& p) {
            const Conv2d c = parse_keys<Conv2d>(kName, kKeys, kv);
            validate(c);
            p.shape = c;
          },
      .print = [](const Problem& p, std::string& out) { print_keys<Conv2d>(kKeys, p.conv(), out); },
      // x is MB×IC×IH×IW, W is OC×(IC/G)×KH×KW, b is OC, y is MB×OC×OH×OW.
      .inputs = {{Arg::src, 0,
                  [](const Problem& p) -> Dims {
                    const Conv2d& c = p.conv();
                    return {c.mb, c.ic, c.ih, c.iw};
                  }},
                 {Arg::wei, -1,
                  [](const Problem& p) -> Dims {
                    const Conv2d& c = p.conv();
                    return {c.oc, c.ic / c.g, c.kh, c.kw};
                  }},
                 {Arg::bias, -1, [](const Problem& p) -> Dims { return {p.conv().oc}; }}},
      .output = {Arg::dst, 0,
                 [](const Problem& p) -> Dims {
                   const Conv2d& c = p.conv();
                   return {c.mb, c.oc, c.oh(), c.ow()};
                 }},
      .accumulation_length = [](const Problem& p) { return taps(p.conv()); },
      .macs =
          [](const Problem& p) {
            const Conv2d& c = p.conv();
            return c.mb * c.oc * c.oh() * c.ow() * taps(c);
          },
      .macs_on_input =
          [](const Problem& p) { return p.conv().mb * p.conv().oc * conv2d_taps_on_input(p.conv()); },
      .layer_type = [](const Problem& p) -> std::string_view {
        const Conv2d& c = p.conv();
        if (c.depthwise()) return "depthwise";
        if (c.g == 1 && c.kh == 1 && c.kw == 1) return "pointwise";
        return "conv";
      },
      // Standard, grouped (non-depthwise: each group sums over several channels) and
      // depthwise, so a kernel that takes only one kind of grouping is listed too.
      .probes = {"conv2d mb=1 ic=4 ih=8 iw=8 oc=4 kh=3 kw=3 ph=1",
                 "conv2d mb=1 ic=4 ih=8 iw=8 oc=8 kh=3 kw=3 ph=1 g=2",
                 "conv2d mb=1 ic=4 ih=8 iw=8 oc=4 kh=3 kw=3 ph=1 g=4"},
      .layer = {.ranks = {3},
                .input = "an image (c×h×w)",
                .keys = [](const Dims& in, int64_t batch) -> DerivedKeys {
                  return {{"mb", batch}, {"ic", in[0]}, {"ih", in[1]}, {"iw", in[2]}};
                },
                .out_shape = [](const Problem& p, const Dims&) -> Dims {
                  const Conv2d& c = p.conv();
                  return {c.oc, c.oh(), c.ow()};
                }},
      .not_in_backward = {Arg::bias},
      .bias_index =
          [](const Problem& p, int64_t i) {
            const Conv2d& c = p.conv();
            return i / (c.oh() * c.ow()) % c.oc;
          },
  };
  return traits;
}

}  // namespace lb
