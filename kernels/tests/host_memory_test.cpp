// Verification's resident blocks (kernels/host_memory.h) and the tensors one case lends
// the next (kernels/case_session.h).
#include "kernels/host_memory.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/buffer.h"
#include "kernels/case_session.h"
#include "kernels/tensor.h"
#include "kernels/verify.h"

namespace lb {
namespace {

TEST(HostMemory, ResidentBlocksOnlyUnderAScopeAndHandedOutAgain) {
  drop_resident();
  EXPECT_EQ(take_resident(size_t(8) << 20), nullptr) << "no scope open";
  const void* first = nullptr;
  {
    const ResidentScope scope;
    EXPECT_EQ(take_resident(1000), nullptr) << "small arrays come from malloc";
    Tensor t(Storage::f32, {1 << 20});  // 4 MiB
    first = t.data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % (size_t(2) << 20), 0u);
    EXPECT_EQ(kept_resident_bytes(), 0u);
  }
  EXPECT_EQ(kept_resident_bytes(), size_t(4) << 20) << "given back, kept";
  {
    const ResidentScope scope;
    Tensor again(Storage::f32, {3 << 18});  // 3 MiB fits the kept 4 MiB block
    EXPECT_EQ(again.data(), first);
    EXPECT_EQ(kept_resident_bytes(), 0u);
    Doubles d(size_t(1) << 20, 1.0);  // 8 MiB: a new block
    EXPECT_EQ(reinterpret_cast<uintptr_t>(d.data()) % (size_t(2) << 20), 0u);
  }
  EXPECT_EQ(kept_resident_bytes(), size_t(12) << 20);
  Tensor outside(Storage::f32, {1 << 20});  // no scope: a mapping of its own, not a kept block
  EXPECT_NE(outside.data(), first);
  EXPECT_EQ(kept_resident_bytes(), size_t(12) << 20);
  drop_resident();
  EXPECT_EQ(kept_resident_bytes(), 0u);
}

TEST(HostMemory, ACaseCountsTheKeptBlocksItsBuffersAreMadeInAndNotItsNewOnes) {
  drop_resident();
  constexpr size_t MiB = size_t(1) << 20;
  begin_case_memory();
  {
    const CaseMemoryScope scope;
    AlignedBuffer<float> fresh(3 * MiB / 4);  // 3 MiB: a new block, the resident set's to count
    EXPECT_EQ(reinterpret_cast<uintptr_t>(fresh.data()) % (2 * MiB), 0u);
    EXPECT_EQ(case_resident_peak(), 0u);
  }
  EXPECT_EQ(kept_resident_bytes(), 4 * MiB) << "given back, kept";
  begin_case_memory();  // the next case: the kept block is resident before its baseline
  {
    const CaseMemoryScope scope;
    {
      AlignedBuffer<float> reused(MiB / 2);  // 2 MiB, zeroed though the block was written
      EXPECT_EQ(kept_resident_bytes(), 0u);
      EXPECT_EQ(case_resident_peak(), 2 * MiB) << "counted as the bytes asked for";
      for (size_t i = 0; i < reused.size(); ++i)
        ASSERT_EQ(reused[i], 0.0f);
    }
    EXPECT_EQ(kept_resident_bytes(), 4 * MiB) << "kept inside the scope, not trimmed";
    Tensor again(Storage::f32, {MiB * 3 / 4});  // 3 MiB in the same block: one block at a time
    Tensor fresh(Storage::f32, {MiB});          // 4 MiB: new
    EXPECT_EQ(case_resident_peak(), 3 * MiB);
  }
  {
    const ResidentScope verification;
    Tensor t(Storage::f32, {MiB * 3 / 4});
    EXPECT_EQ(case_resident_peak(), 3 * MiB) << "verification's blocks are not the case's";
  }
  begin_case_memory();
  EXPECT_EQ(case_resident_peak(), 0u);
  drop_resident();
}

TEST(HostMemory, ASessionLendsItsInputsAndOutputsToTheNextOfTheSameProblem) {
  Problem separate = parse_problem("dense mb=64 ic=512 oc=1024");
  separate.relu = Relu::separate;
  Problem none = separate;
  none.relu = Relu::none;
  const KernelEntry& k = oracle(Op::dense);
  size_t input_bytes = 0, dst_bytes = 0;
  {
    keep_inputs_only_for(separate, 7);
    CaseSession s(k, separate);
    s.allocate(7);
    EXPECT_EQ(s.reused_bytes(), 0u);
    for (Arg a : input_args(separate))
      input_bytes += s.tensors().at(a).bytes();
    dst_bytes = s.tensors().at(Arg::dst).bytes();
    s.prepare();
    s.run();
    s.finish();
    EXPECT_EQ(s.verify().status, Status::passed);
  }
  keep_inputs_only_for(none, 7);  // relu_dst is not none's: dropped here, before a baseline
  CaseSession s(k, none);
  s.allocate(7);
  EXPECT_EQ(s.reused_bytes(), input_bytes + dst_bytes);
  EXPECT_EQ(scan_output(s.tensors().at(Arg::dst)).unwritten, s.tensors().at(Arg::dst).elements())
      << "a lent output is poisoned again";
  s.prepare();
  s.run();
  s.finish();
  EXPECT_EQ(s.verify().status, Status::passed);
}

TEST(HostMemory, KernelsShareTheTemporaryPoolOneAfterAnother) {
  EXPECT_EQ(take_temporary(4096), nullptr);  // no pool current: the kernel allocates its own
  TemporaryPool pool;
  {
    const TemporaryScope scope(pool);
    pool.next_kernel();  // a first kernel: two temporaries, one after the other
    auto* a = static_cast<std::byte*>(take_temporary(1000));
    auto* b = static_cast<std::byte*>(take_temporary(3000));
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
    EXPECT_EQ(b, a + 1024);  // 64-byte aligned after a's 1000 bytes
    pool.next_kernel();      // the next starts at the pool's start again
    EXPECT_EQ(take_temporary(500), a);
    EXPECT_EQ(pool.bytes(), 1024u + 3000u);  // the largest kernel's
    a[0] = std::byte{1};                     // memory, once touched
    b[2999] = std::byte{2};
  }
  EXPECT_EQ(take_temporary(64), nullptr);  // the scope closed
}

}  // namespace
}  // namespace lb
