#include "kernels/cuda/gemv_split_plan.h"

#include "gtest/gtest.h"

namespace dynsparse::cuda {
namespace {

// 660 resident blocks: 5 tensor-core blocks of 256 threads at 48 registers
// on each of 132 SMs (H100, H200).
constexpr int64_t kResident = 660;

TEST(GemvSplitPlanTest, FillsTheLastWave) {
  // Llama-2-7B's q/k/v (12288 rows, 768 blocks): 1.16 waves unsplit; 2 and
  // 3 splits fill 78% and 87% of their last wave, 4 fills 93%.
  EXPECT_EQ(WaveFillingSplits(768, kResident, 4), 4);
  // Its down projection (4096 rows, K 11008): 5 splits are 1.94 waves.
  EXPECT_EQ(WaveFillingSplits(256, kResident, 8), 5);
  // A grid that already fills 90% of its waves stays whole.
  EXPECT_EQ(WaveFillingSplits(1300, kResident, 8), 1);
  EXPECT_EQ(WaveFillingSplits(kResident, kResident, 8), 1);
}

TEST(GemvSplitPlanTest, KeepsToTheLimitAndTakesTheFewestOnATie) {
  // The o-projection (256 blocks, K 4096: at most 4 splits): 2 and 4 both
  // fill 78%; the fewer splits win.
  EXPECT_EQ(WaveFillingSplits(256, kResident, 4), 2);
  // Never more than the limit, nor more than 8.
  EXPECT_EQ(WaveFillingSplits(768, kResident, 2), 2);
  EXPECT_LE(WaveFillingSplits(100, kResident, 100), 8);
  EXPECT_EQ(WaveFillingSplits(768, kResident, 0), 1);
}

TEST(GemvSplitPlanTest, DegenerateSizesGiveOneSplit) {
  EXPECT_EQ(WaveFillingSplits(0, kResident, 8), 1);
  EXPECT_EQ(WaveFillingSplits(768, 0, 8), 1);
}

}  // namespace
}  // namespace dynsparse::cuda
