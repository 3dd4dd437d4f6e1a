// conv2d: cross-correlation in NCHW, standard, grouped or depthwise; everything
// layerbench knows about it (the shape: conv2d.h).
#include "kernels/ops/conv2d.h"

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

}  // namespace

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
  };
  return traits;
}

}  // namespace lb
