// Backend `eigen`: Eigen's tensor contractions and array expressions, one registration line
// each (the ids live here only).
#include <Eigen/Core>
#include <iterator>
#include <string>

#include "kernels/eigen/kernels.h"
#include "kernels/registry.h"

namespace lb {

void register_eigen(Registry& r) {
  r.add_context("layerbench_eigen_version", std::to_string(EIGEN_WORLD_VERSION) + "." +
                                                std::to_string(EIGEN_MAJOR_VERSION) + "." +
                                                std::to_string(EIGEN_MINOR_VERSION));
  using namespace eigen;
  r.add({.id = "dense.eigen.contraction",
         .idea = "Eigen tensor contraction, bias and ReLU in its output kernel",
         .accumulation = "f32",
         .multithreaded = true,
         .passes = {std::begin(kAllPasses), std::end(kAllPasses)}},
        [] { return split_by_pass(make_dense(), make_dense_backward()); });
  r.add({.id = "conv2d.eigen.im2col",
         .idea = "im2col + Eigen tensor contraction per image and group",
         .accumulation = "f32",
         .multithreaded = true,
         .passes = {std::begin(kAllPasses), std::end(kAllPasses)}},
        [] { return split_by_pass(make_conv2d(), make_conv2d_backward()); });
  r.add({.id = "conv2d.eigen.depthwise",
         .idea = "per-plane Eigen array expressions, one per filter tap",
         .accumulation = "f32",
         .multithreaded = true},
        [] { return make_depthwise_conv2d(); });
  r.add({.id = "lstm.eigen.hoisted",
         .idea = "input projection hoisted over all steps, Eigen contractions",
         .accumulation = "f32",
         .multithreaded = true},
        [] { return make_lstm(); });
  r.add({.id = "pool2d.eigen.taps",
         .idea = "per-plane Eigen array expressions, one per window tap",
         .accumulation = "f32",
         .multithreaded = true},
        [] { return make_pool2d(); });
  r.add({.id = "add.eigen.default",
         .idea = "one Tensor expression on the thread pool device",
         .accumulation = "f32",
         .multithreaded = true},
        [] { return make_add(); });
  r.add({.id = "softmax.eigen.default",
         .idea = "Tensor expressions: max and sum reduced along the channels, exp, divide",
         .accumulation = "f32",
         .multithreaded = true},
        [] { return make_softmax(); });
}

}  // namespace lb
