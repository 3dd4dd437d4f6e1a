// What the cpu backend's kernels share: the pool, workspace and buffers a kernel holds
// from prepare() on, and the ReLU passes for relu=inplace/separate.
#pragma once

#include "kernels/buffer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/pool.h"
#include "kernels/kernel.h"

namespace lb::cpu {

// relu=inplace: dst := max(dst, 0); relu=separate: relu_dst := max(dst, 0) (f32 or bf16
// storage); else nothing. Split across the pool.
void relu_pass(Relu relu, TensorSet& ts, Pool* pool);

}  // namespace lb::cpu
