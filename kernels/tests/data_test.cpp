// Suites and networks as data: the bundled files parse, the analytic totals match the
// published figures, and malformed files are rejected with file:line.
#include "kernels/data.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "kernels/common.h"
#include "kernels/ops/conv2d.h"

namespace lb {
namespace {

const Node& layer(const Graph& n, const std::string& name) {
  for (const Node& l : n.nodes)
    if (l.name == name) return l;
  throw Error("no layer " + name);
}

std::string network_error(const std::string& text) {
  try {
    parse_network(text, "net.txt", 1, DType::f32);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Network, AlexNetMatchesTorchvision) {
  const Graph n = load_network("alexnet", 1, DType::f32);
  const GraphTotals t = totals(n);
  EXPECT_EQ(t.params, 61100840);
  EXPECT_NEAR(double(t.macs), 714e6, 0.01 * 714e6);
  const Node& conv1 = layer(n, "conv1");
  EXPECT_EQ(conv1.out_shape, (std::vector<int64_t>{64, 55, 55}));
  EXPECT_EQ(conv1.params, 64 * 3 * 11 * 11 + 64);
  EXPECT_EQ(conv1.macs, 55 * 55 * 64 * 3 * 11 * 11);
  EXPECT_EQ(layer(n, "pool5").out_shape, (std::vector<int64_t>{256, 6, 6}));
  EXPECT_EQ(layer(n, "fc6").params, 9216 * 4096 + 4096);
  EXPECT_EQ(layer(n, "fc6").param_bytes, 4.0 * (9216 * 4096 + 4096));
  EXPECT_EQ(problems(n).size(), 12u);  // 5 conv2d, 3 maxpool (pool2d), 3 dense, softmax
  EXPECT_EQ(problems(n)[0].name, "conv1");
}

TEST(Network, MobileNetV1MatchesThePaper) {
  const Graph n = load_network("mobilenet_v1", 1, DType::f32);
  const GraphTotals t = totals(n);
  EXPECT_NEAR(double(t.params), 4.22e6, 0.01 * 4.22e6);
  EXPECT_NEAR(double(t.macs), 569e6, 0.01 * 569e6);
  const Node& dw = layer(n, "dw2");
  EXPECT_EQ(dw.type, "depthwise");
  EXPECT_EQ(dw.macs, 112 * 112 * 32 * 9);
  const Node& pw = layer(n, "pw2");
  EXPECT_EQ(pw.type, "pointwise");
  EXPECT_EQ(pw.macs, 112 * 112 * 32 * 64);
  EXPECT_EQ(layer(n, "pw14").out_shape, (std::vector<int64_t>{1024, 7, 7}));
  // Claim 8: a depthwise-separable block costs a fraction of the standard conv it replaces.
  const double standard = 112.0 * 112 * 32 * 64 * 9;
  EXPECT_NEAR((dw.macs + pw.macs) / standard, 1.0 / 64 + 1.0 / 9, 1e-12);
}

TEST(Network, LstmLanguageModel) {
  const Graph n = load_network("lstm_lm", 4, DType::f32);
  const GraphTotals t = totals(n);
  // embedding 10000·650, two layers of 4·650·(650 + 650) + 4·650, projection 650·10000 + 10000
  EXPECT_EQ(t.params, 6500000 + 2 * (4 * 650 * 1300 + 2600) + 6510000);
  const Node& proj = layer(n, "proj");
  EXPECT_EQ(proj.problem->dense().mb, 35 * 4);  // every step of every sample
  EXPECT_EQ(layer(n, "lstm").problem->lstm().t, 35);
  EXPECT_EQ(layer(n, "lstm").macs, 35 * 4 * (4 * 650 * 1300) * 2);
}

TEST(Network, ParametersFixedActivationsGrowWithBatch) {
  const GraphTotals b1 = totals(load_network("alexnet", 1, DType::f32));
  const GraphTotals b8 = totals(load_network("alexnet", 8, DType::f32));
  EXPECT_EQ(b1.param_bytes, b8.param_bytes);
  EXPECT_DOUBLE_EQ(b8.activation_bytes, 8 * b1.activation_bytes);
  EXPECT_EQ(b8.macs, 8 * b1.macs);
  EXPECT_GT(b1.training_bytes, b1.inference_bytes);
  const GraphTotals bf16 = totals(load_network("alexnet", 1, DType::bf16));
  EXPECT_NEAR(bf16.param_bytes / b1.param_bytes, 0.5, 0.001);  // biases stay f32
}

TEST(Network, InPlaceReluWritesNoNewBuffer) {
  const std::string head = "input c=4\nfc dense oc=8\n";
  const Graph inplace = parse_network(head + "r relu\n", "a.txt", 2, DType::f32);
  const Graph separate = parse_network(head + "r relu mode=separate\n", "b.txt", 2, DType::f32);
  EXPECT_EQ(inplace.nodes[1].out_bytes, 0.0);
  EXPECT_EQ(separate.nodes[1].out_bytes, 2 * 8 * 4.0);
  EXPECT_EQ(totals(separate).training_bytes - totals(inplace).training_bytes, 2 * 8 * 4.0);
}

TEST(Network, ErrorsCiteFileAndLine) {
  EXPECT_EQ(network_error("conv1 conv2d oc=8 kh=3 kw=3\n"),
            "net.txt:1: 'conv1': the first line must be 'input ...'");
  EXPECT_EQ(
      network_error("input c=3 h=8 w=8\n# comment\n\nc1 conv2d oc=8 kh=3 kw=3\nc2 conv3d oc=8\n"),
      "net.txt:5: c2: 'conv3d': unknown layer kind; expected dense conv2d lstm pool2d add softmax maxpool "
      "avgpool global_avgpool embedding relu relu6 batchnorm flatten concat");
  EXPECT_EQ(network_error("input c=3 h=8 w=8\nc1 conv2d oc=8 kh=3 kw=3 ic=4\n"),
            "net.txt:2: conv2d: ic=4: the previous layer gives 3");
  EXPECT_EQ(network_error("input c=3 h=8 w=8\nc1 conv2d oc=8 kh=0 kw=3\n"),
            "net.txt:2: conv2d: kh=0: must be >= 1");
  EXPECT_EQ(network_error("input c=3 h=8 w=8\nc1 conv2d oc=8 kh=3 kw=3 mb=4\n"),
            "net.txt:2: conv2d: mb=4: set by the network (--batch, --dtype, the layer name), not the layer");
  EXPECT_EQ(network_error("input c=3 h=8 w=8\nfc dense oc=10\n"),
            "net.txt:2: dense: needs a vector or sequence input, the previous layer gives 3x8x8");
  EXPECT_EQ(network_error("input c=3 h=8 w=8\nc1 conv2d oc=3 kh=1 kw=1\nc1 relu\n"),
            "net.txt:3: c1: layer name used twice");
  EXPECT_EQ(network_error("input c=3 h=8 w=8\nc1 conv2d oc=3 kh=1 kw=1\ns add from=c9\n"),
            "net.txt:3: add: from=c9: no earlier layer of that name");
  EXPECT_EQ(network_error("input t=5\nl lstm hc=4\n"),
            "net.txt:2: lstm: token ids need an embedding layer first");
  EXPECT_EQ(network_error("input c=3 h=8 w=8\np maxpool k=9\n"),
            "net.txt:2: pool2d: k=9: larger than the padded input (8x8)");
  EXPECT_EQ(network_error("input c=3 h=8 w=8 x=1\n"),
            "net.txt:1: input: 'x=1': unknown key; expected c=, h= w= (an image), t= (a sequence)");
  EXPECT_EQ(network_error("input c=3 h=8 w=8\n"), "net.txt: no layers after 'input'");
}

TEST(Network, SizesThatWouldOverflowAreRejected) {
  // Each of these once overflowed int64 arithmetic (UBSan, in the sanitizer build and
  // the fuzz targets of kernels/tests/fuzz): a pool's huge padding in product() of its
  // output shape, the sum of three layers of almost 2^62 MACs each in totals(), T·batch
  // rows at a huge --batch.
  // (The pool is an op now: its padding is at most half its window, so it stops there.)
  EXPECT_EQ(network_error("input c=1 h=1 w=1\np maxpool k=1 p=2147483647\nf flatten\n"),
            "net.txt:2: pool2d: p=2147483647: more than half the window k=1");
  EXPECT_EQ(network_error("input c=2147483647 h=2147483647 w=1\n"),
            "net.txt:1: input: more than 2^40 values per sample (2147483647x2147483647x1)");
  // Five layers of 2^60 MACs (each tensor within parse_problem's 2^48 elements).
  EXPECT_EQ(network_error("input t=1048576 c=1048576\na dense oc=1048576\nb dense oc=1048576\n"
                          "c dense oc=1048576\nd dense oc=1048576\ne dense oc=1048576\n"),
            "net.txt:6: e: the network's parameters or MACs add up to more than 2^62");
  // A layer whose weights alone would be 2^62 elements is stopped at its problem.
  EXPECT_EQ(network_error("input c=2147483647\na dense oc=2147483647\n"),
            "net.txt:2: dense: problem too large: wei has 2^62.0 elements, more than 2^48");
  try {
    parse_network("input t=35\ne embedding vocab=10 dim=4\np dense oc=10\n", "net.txt", int64_t(1) << 62,
                  DType::f32);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--batch 4611686018427387904: must be between 1 and 2147483647");
  }
  // The largest batch still parses where the layers allow it.
  const Graph widest = parse_network("input c=4\nfc dense oc=8\n", "net.txt", 2147483647, DType::f32);
  EXPECT_EQ(widest.nodes[0].problem->dense().mb, 2147483647);
}

TEST(Network, AddChecksShapes) {
  const Graph n = parse_network(
      "input c=4 h=6 w=6\na conv2d oc=4 kh=3 kw=3 ph=1\nb conv2d oc=4 kh=3 kw=3 ph=1\ns add from=a\n",
      "r.txt", 1, DType::f32);
  EXPECT_EQ(n.nodes[2].in_bytes, 2 * 4 * 36 * 4.0);
  EXPECT_EQ(n.nodes[2].inputs, (std::vector<int>{1, 0}));
  EXPECT_EQ(
      network_error("input c=4 h=6 w=6\na conv2d oc=4 kh=3 kw=3\nb conv2d in=input oc=4 kh=3 kw=3 ph=1\n"
                    "s add in=a,b\n"),
      "net.txt:4: add: b: shape 4x6x6 differs from 4x4x4");
}

// The graphs of the papers' networks: branches (in=), projection shortcuts, batch
// normalisation folded into the convolution before it, ReLU6, the global average pool.
TEST(Network, ResNet50MobileNetV2AndVgg16MatchThePapers) {
  const Graph resnet = load_network("resnet50", 1, DType::f32);
  const GraphTotals r = totals(resnet);
  EXPECT_EQ(r.params, 25557032);  // torchvision.models.resnet50
  EXPECT_NEAR(double(r.macs), 4.1e9, 0.01 * 4.1e9);
  EXPECT_EQ(layer(resnet, "s2b1_proj").problem->conv().sh, 2);
  EXPECT_EQ(layer(resnet, "s2b1_proj").inputs,
            layer(resnet, "s2b1_c1").inputs);  // both read the block's input
  EXPECT_EQ(layer(resnet, "s4b3_out").out_shape, (std::vector<int64_t>{2048, 7, 7}));
  EXPECT_EQ(layer(resnet, "pool").out_shape, (std::vector<int64_t>{2048, 1, 1}));
  EXPECT_EQ(problems(resnet).size(), 73u);  // 49 convolutions on the main path, 4 projections, fc, 2 pools,
                                            // 16 adds, softmax
  const Graph mobilenet = load_network("mobilenet_v2", 1, DType::f32);
  const GraphTotals m = totals(mobilenet);
  EXPECT_EQ(m.params, 3504872);  // torchvision.models.mobilenet_v2
  EXPECT_NEAR(double(m.macs), 300e6, 0.01 * 300e6);
  EXPECT_EQ(layer(mobilenet, "b2_dw").type, "depthwise");
  EXPECT_EQ(layer(mobilenet, "b2_r2").kind, "relu6");
  EXPECT_EQ(layer(mobilenet, "relu_last").out_shape, (std::vector<int64_t>{1280, 7, 7}));
  const GraphTotals v = totals(load_network("vgg16", 1, DType::f32));
  EXPECT_EQ(v.params, 138357544);  // torchvision.models.vgg16
  EXPECT_NEAR(double(v.macs), 15.47e9, 0.01 * 15.47e9);
}

// ResNet-18 (torchvision.models.resnet18: 11,689,512 parameters, 1.82 GMACs) written here
// as a user would, from bench/networks/README.md: basic blocks of two 3x3 convolutions.
TEST(Network, AHeldOutResNet18InTheDocumentedGrammar) {
  std::string text =
      "input c=3 h=224 w=224\nconv1 conv2d oc=64 kh=7 kw=7 sh=2 ph=3\nbn1 batchnorm\nrelu relu\n"
      "pool maxpool k=3 s=2 p=1\n";
  std::string prev = "pool";
  int64_t channels = 64;
  for (int64_t stage = 0, width = 64; stage < 4; ++stage, width *= 2)
    for (int block = 0; block < 2; ++block) {
      const std::string b = "l" + std::to_string(stage) + std::to_string(block) + "_";
      const std::string stride = stage > 0 && block == 0 ? " sh=2" : "";
      const std::string w = " oc=" + std::to_string(width);
      text += b + "c1 conv2d in=" + prev + w + " kh=3 kw=3 ph=1" + stride + "\n" + b + "bn1 batchnorm\n" + b +
              "r1 relu\n" + b + "c2 conv2d" + w + " kh=3 kw=3 ph=1\n" + b + "bn2 batchnorm\n";
      std::string shortcut = prev;
      if (channels != width) {
        text += b + "down conv2d in=" + prev + w + " kh=1 kw=1" + stride + "\n" + b + "downbn batchnorm\n";
        shortcut = b + "downbn";
      }
      text += b + "add add in=" + b + "bn2," + shortcut + "\n" + b + "out relu\n";
      prev = b + "out";
      channels = width;
    }
  text += "gap global_avgpool\nflat flatten\nfc dense oc=1000\n";
  const GraphTotals t = totals(parse_network(text, "resnet18.txt", 1, DType::f32));
  EXPECT_EQ(t.params, 11689512);
  EXPECT_NEAR(double(t.macs), 1.82e9, 0.01 * 1.82e9);
}

TEST(Network, BranchesConcatAndTheirErrors) {
  // An inception-like module: three branches of the same input side by side.
  const Graph g = parse_network(
      "input c=8 h=5 w=5\na conv2d oc=4 kh=1 kw=1\nb conv2d in=input oc=6 kh=3 kw=3 ph=1\n"
      "c maxpool in=input k=3 s=1 p=1\ncat concat in=a,b,c\nr relu6 mode=separate\n",
      "inception.txt", 2, DType::f32);
  EXPECT_EQ(layer(g, "b").inputs, (std::vector<int>{kGraphInput}));
  EXPECT_EQ(layer(g, "cat").out_shape, (std::vector<int64_t>{18, 5, 5}));
  EXPECT_EQ(layer(g, "cat").in_bytes, 2 * (4 + 6 + 8) * 25 * 4.0);
  EXPECT_TRUE(layer(g, "r").new_buffer);
  EXPECT_EQ(
      network_error("input c=3 h=8 w=8\nc1 conv2d oc=3 kh=1 kw=1\nc2 conv2d in=c1,input oc=3 kh=1 kw=1\n"),
      "net.txt:3: conv2d: takes one input, in= names 2");
  EXPECT_EQ(network_error("input c=3 h=8 w=8\nc1 conv2d in=c9 oc=3 kh=1 kw=1\n"),
            "net.txt:2: conv2d: in=c9: no earlier layer of that name");
  EXPECT_EQ(
      network_error("input c=3 h=8 w=8\nc1 conv2d oc=3 kh=1 kw=1\ns add\n"),
      "net.txt:3: add: needs two inputs or more: in=<layer>,<layer> (or from=<layer>: it and the previous "
      "line)");
  EXPECT_EQ(network_error("input c=3 h=8 w=8\nc1 conv2d oc=3 kh=1 kw=1\nc2 conv2d oc=3 kh=3 kw=3\n"
                          "cat concat in=c1,c2\n"),
            "net.txt:4: concat: shapes 3x8x8 and 3x6x6 differ beyond the channels");
  EXPECT_EQ(network_error("input c=3 h=8 w=8\nb batchnorm\nb2 batchnorm\n"), "(no error)");
  EXPECT_EQ(layer(parse_network("input c=3 h=8 w=8\nb batchnorm\n", "n.txt", 1, DType::f32), "b").params, 6);
}

// Memory by liveness, by hand: two dense layers on one input whose outputs are added, then
// an in-place ReLU; batch 2, f32: the input 32 bytes, each output 64.
TEST(Network, LivenessCountsBuffersFromWriterToLastReader) {
  const Graph g = parse_network("input c=4\na dense oc=8\nb dense in=input oc=8\ns add in=a,b\nr relu\n",
                                "skip.txt", 2, DType::f32);
  // Inference: at s, a, b and s are live (the input was freed after b): 192.
  const Liveness fwd = liveness(g, Pass::fwd);
  EXPECT_EQ(fwd.activations, 192.0);
  EXPECT_EQ(fwd.at, "s");
  EXPECT_EQ(fwd.total(), 192.0 + 2 * (4 * 8 + 8) * 4.0);
  // Training: the input kept for a's and b's backward, s's buffer for the ReLU's mask. At
  // s in the forward, and at s's backward (the gradients of s, a and b, and the input):
  // 224; at the forward's end the input and s: 96.
  const Liveness train = liveness(g, Pass::train);
  EXPECT_EQ(train.activations, 224.0);
  EXPECT_EQ(train.at, "s");
  EXPECT_EQ(train.kept, 96.0);
  EXPECT_EQ(train.total(), 224.0 + 2 * 2 * (4 * 8 + 8) * 4.0);  // + parameters and their gradients
  EXPECT_THROW(liveness(g, Pass::bwd_d), Error);
}

TEST(Suite, ErrorsCiteFileAndLine) {
  try {
    parse_suite("# comment\ndense mb=1 ic=1 oc=1\n\nconv2d mb=1 ic=3 ih=8 iw=8 oc=4 kh=0 kw=3\n", "s.txt");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "s.txt:4: conv2d: kh=0: must be >= 1");
  }
  EXPECT_THROW(parse_suite("# only a comment\n", "empty.txt"), Error);
  try {
    load_suite("no_such_suite");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("unknown suite 'no_such_suite' (available: ", 0), 0u) << e.what();
  }
}

TEST(Suite, ByteOrderMarkIsSkipped) {
  // Windows editors save "UTF-8 with BOM": the mark is no part of the first line's op.
  const auto problems = parse_suite(
      "\xEF\xBB\xBF"
      "dense mb=1 ic=2 oc=3\r\n",
      "bom.txt");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(print(problems[0]), "dense mb=1 ic=2 oc=3 dt=f32 relu=none");
  // Only at the start of the file: elsewhere it is the unknown token it looks like.
  EXPECT_THROW(parse_suite("dense mb=1 ic=2 oc=3\n\xEF\xBB\xBF"
                           "dense mb=1 ic=2 oc=3\n",
                           "s.txt"),
               Error);
  EXPECT_EQ(parse_network("\xEF\xBB\xBFinput c=4\nfc dense oc=2\n", "n.txt", 1, DType::f32).nodes.size(), 1u);
}

TEST(Suite, DirectoryIsNamedAsOne) {
  const std::string dir = ::testing::TempDir() + "lb_suite_dir.txt";
  std::filesystem::create_directories(dir);
  try {
    load_suite(dir);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "suite file '" + dir + "' is a directory; expected a suite file");
  }
  std::filesystem::remove(dir);
}

TEST(Errors, ControlCharactersAreEscaped) {
  // A token with an escape sequence (ESC [ 2 J clears the screen) is quoted printably.
  try {
    parse_suite("dense mb=1 ic=2 oc=3 \x1b[2J=1\n", "s.txt");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\x1b'), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\\x1b[2J=1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(printable("a\tb\nc\x7f"), "a\\tb\\nc\\x7f");
  // UTF-8 passes; C1 controls (U+009B, 8-bit CSI) and bytes that are not UTF-8 do not.
  EXPECT_EQ(printable("\xC3\xA9t\xC3\xA9 \xE2\x86\x92"), "\xC3\xA9t\xC3\xA9 \xE2\x86\x92");
  EXPECT_EQ(printable("\xC2\x9B"
                      "2J"),
            "\\xc2\\x9b2J");
  EXPECT_EQ(printable("\x9B\xFF\xC3"), "\\x9b\\xff\\xc3");
  EXPECT_EQ(printable("\xED\xA0\x80"), "\\xed\\xa0\\x80");         // a surrogate
  EXPECT_EQ(printable(printable("\x1b\\")), printable("\x1b\\"));  // idempotent
  EXPECT_STREQ(Error("x\ry").what(), "x\\x0dy");
}

TEST(Data, EveryBundledFileParses) {
  ASSERT_FALSE(list_data("suites").empty());
  ASSERT_FALSE(list_data("networks").empty());
  for (const auto& s : list_data("suites"))
    EXPECT_FALSE(load_suite(s).empty()) << s;
  for (const auto& n : list_data("networks"))
    for (DType dt : kAllDTypes)
      EXPECT_FALSE(load_network(n, 2, dt).nodes.empty()) << n;
}

TEST(Model, HandArithmetic) {
  // Claim 4: a 1000×1000 f32 matrix is 4 MB.
  const Model f32 = model(parse_problem("dense mb=1 ic=1000 oc=1000"));
  EXPECT_EQ(f32.params, 1000 * 1000 + 1000);
  EXPECT_EQ(f32.param_bytes, 4.0 * 1001000);
  EXPECT_EQ(f32.macs, 1000000);
  EXPECT_EQ(f32.flops, 2e6);
  const Model bf16 = model(parse_problem("dense mb=1 ic=1000 oc=1000 dt=bf16"));
  EXPECT_EQ(bf16.param_bytes, 2.0 * 1000000 + 4.0 * 1000);
  const Model i8 = model(parse_problem("dense mb=1 ic=1000 oc=1000 dt=i8"));
  EXPECT_EQ(i8.param_bytes, 1000000 + 4.0 * 1000);
  // A separate ReLU costs one more output buffer; in place costs nothing.
  const Model sep = model(parse_problem("dense mb=256 ic=4096 oc=4096 relu=separate"));
  const Model inp = model(parse_problem("dense mb=256 ic=4096 oc=4096 relu=inplace"));
  EXPECT_EQ(sep.inference_bytes - inp.inference_bytes, 256 * 4096 * 4.0);
  const Model conv = model(parse_problem("conv2d mb=2 ic=8 ih=10 iw=10 oc=16 kh=3 kw=3 ph=1"));
  EXPECT_EQ(conv.macs, 2 * 16 * 10 * 10 * 8 * 9);
  EXPECT_EQ(conv.min_bytes, 4.0 * (16 * 8 * 9 + 16 + 2 * 8 * 100 + 2 * 16 * 100));
  EXPECT_DOUBLE_EQ(conv.intensity, conv.flops / conv.min_bytes);
  const Model lstm = model(parse_problem("lstm mb=2 t=3 ic=4 hc=5 l=2"));
  EXPECT_EQ(lstm.params, 20 * 4 + 20 * 5 + 2 * 20 * 5 + 2 * 20);
  EXPECT_EQ(lstm.macs, 3 * 2 * (20 * 4 + 20 * 5 + 2 * 20 * 5));
  EXPECT_EQ(layer_type(parse_problem("conv2d mb=1 ic=8 ih=4 iw=4 oc=8 kh=1 kw=1")), "pointwise");
}

// The MACs on the input (FLOPs count these): a convolution's taps over its zero padding
// left out, against counting them one by one, over strides, dilations, paddings wider than
// the filter and filters wider than the input; equal to the MACs without padding.
TEST(Model, MacsOnTheInputLeaveOutThePadding) {
  // 10×10, 3×3, one pixel of padding: per axis 10·3 − 2 pairs on the input, per sample and
  // output channel 8 channels × 28².
  const Model conv = model(parse_problem("conv2d mb=2 ic=8 ih=10 iw=10 oc=16 kh=3 kw=3 ph=1"));
  EXPECT_EQ(conv.macs_on_input, 2 * 16 * 8 * 28 * 28);
  EXPECT_EQ(conv.flops, 2.0 * double(conv.macs_on_input));
  const Model unpadded = model(parse_problem("conv2d mb=2 ic=8 ih=10 iw=10 oc=16 kh=3 kw=3"));
  EXPECT_EQ(unpadded.macs_on_input, unpadded.macs);
  const Model dense = model(parse_problem("dense mb=3 ic=7 oc=5"));
  EXPECT_EQ(dense.macs_on_input, dense.macs);
  auto brute = [](const Conv2d& c) {
    int64_t n = 0;
    for (int64_t oh = 0; oh < c.oh(); ++oh)
      for (int64_t ow = 0; ow < c.ow(); ++ow)
        for (int64_t r = 0; r < c.kh; ++r)
          for (int64_t s = 0; s < c.kw; ++s) {
            const int64_t ih = oh * c.sh - c.ph + r * c.dh, iw = ow * c.sw - c.pw + s * c.dw;
            n += ih >= 0 && ih < c.ih && iw >= 0 && iw < c.iw;
          }
    return n * (c.ic / c.g);
  };
  int checked = 0;
  for (int64_t in = 1; in <= 9; ++in)
    for (int64_t k = 1; k <= 4; ++k)
      for (int64_t stride = 1; stride <= 3; ++stride)
        for (int64_t dilation = 1; dilation <= 3; ++dilation)
          for (int64_t pad = 0; pad <= 6; ++pad) {
            Conv2d c;
            c.ic = 2;
            c.ih = in;
            c.iw = in + 2;
            c.kh = k;
            c.kw = 5 - k;
            c.sh = stride;
            c.sw = 4 - stride;
            c.dh = dilation;
            c.dw = 4 - dilation;
            c.ph = pad;
            c.pw = 6 - pad;
            if (c.oh() < 1 || c.ow() < 1) continue;
            ASSERT_EQ(conv2d_taps_on_input(c), brute(c))
                << "ih=" << c.ih << " iw=" << c.iw << " kh=" << c.kh << " kw=" << c.kw << " sh=" << c.sh
                << " sw=" << c.sw << " dh=" << c.dh << " dw=" << c.dw << " ph=" << c.ph << " pw=" << c.pw;
            ++checked;
          }
  EXPECT_GT(checked, 1000);
  // The largest size a line may give (2^31 − 1 output rows), in closed form: every row's 3
  // taps on the input but the first's and the last's missing one each.
  const Model tall = model(parse_problem("conv2d mb=1 ic=1 ih=2147483647 iw=1 oc=1 kh=3 kw=1 ph=1"));
  EXPECT_EQ(tall.macs_on_input, int64_t(3) * 2147483647 - 2);
}

}  // namespace
}  // namespace lb
