// The fused sparse MLP's timeline summary (kernels/cuda/sparse_mlp_timeline.h)
// on hand-made stamps: statistics over blocks, then medians over launches.
#include "kernels/cuda/sparse_mlp_timeline.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dynsparse::cuda {
namespace {

using ::testing::HasSubstr;

// Launches of two blocks on SMs 3 and 4; launch c's stamps are shifted by
// 10 us * c and its second block is `late` ns behind its first at every
// event.
std::vector<uint64_t> Stamps(const std::vector<uint64_t>& late) {
  const uint64_t events[kFusedMlpEvents] = {0, 2000, 2500, 9000, 9500};
  std::vector<uint64_t> out;
  for (size_t call = 0; call < late.size(); ++call) {
    uint64_t sm = 3;
    for (uint64_t shift : {uint64_t{0}, late[call]}) {
      for (uint64_t e : events)
        out.push_back(1'000'000 + 10'000 * call + e + shift);
      out.push_back(sm++);
    }
  }
  return out;
}

TEST(FusedMlpTimelineTest, SummarisesBlocksThenLaunches) {
  const auto t = SummarizeFusedMlpTimeline(Stamps({100, 300, 200}), 3, 2);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->calls, 3);
  EXPECT_EQ(t->blocks, 2);
  // up_done: 2.0 us for the first block; the second block's 2.0 us + late
  // (median over launches: 0.2 us late).
  EXPECT_DOUBLE_EQ(t->events_us[1][0], 2.0);
  EXPECT_DOUBLE_EQ(t->events_us[1][1], 2.2);  // Upper median of 2 blocks.
  EXPECT_DOUBLE_EQ(t->events_us[1][2], 2.2);
  EXPECT_DOUBLE_EQ(t->events_us[0][0], 0.0);
  EXPECT_DOUBLE_EQ(t->span_us, 9.7);  // 9.5 us + the median lateness.
  // Next launch's first begin minus this one's last write: 10 - 9.5 - late
  // (0.4 and 0.2 us after the launches late by 0.1 and 0.3 us).
  EXPECT_DOUBLE_EQ(t->between_calls_us, 0.4);
  EXPECT_THAT(FusedMlpTimelineJson(*t, "x"),
              HasSubstr("\"up_done_us\": [2.00, 2.20, 2.20]"));
  // Each block alone on its SM: no shared ones.
  EXPECT_EQ(t->shared_sm_blocks, 0);
  EXPECT_DOUBLE_EQ(t->by_sm_us[1][1], 0.0);
}

// Three blocks, the last two on one SM and 1 us behind the first: the
// shared ones' median against the lone one's.
TEST(FusedMlpTimelineTest, SplitsBlocksThatShareAnSm) {
  const uint64_t events[kFusedMlpEvents] = {0, 2000, 2500, 9000, 9500};
  std::vector<uint64_t> stamps;
  for (uint64_t call = 0; call < 2; ++call) {
    for (const auto& [late, sm] :
         {std::pair<uint64_t, uint64_t>{0, 7}, {1000, 9}, {1000, 9}}) {
      for (uint64_t e : events) {
        stamps.push_back(1'000'000 + 20'000 * call + e + (e > 0 ? late : 0));
      }
      stamps.push_back(sm);
    }
  }
  const auto t = SummarizeFusedMlpTimeline(stamps, 2, 3);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shared_sm_blocks, 2);
  EXPECT_DOUBLE_EQ(t->by_sm_us[1][0], 2.0);  // up_done, alone.
  EXPECT_DOUBLE_EQ(t->by_sm_us[1][1], 3.0);  // Shared.
  EXPECT_THAT(FusedMlpTimelineJson(*t, "x"),
              HasSubstr("\"up_done_by_sm_us\": [2.00, 3.00]"));
}

TEST(FusedMlpTimelineTest, RejectsStampsOfTheWrongCount) {
  auto stamps = Stamps({100, 300});
  stamps.pop_back();
  const auto t = SummarizeFusedMlpTimeline(stamps, 2, 2);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("23 stamps for 2 launches"));
  EXPECT_FALSE(SummarizeFusedMlpTimeline(Stamps({100}), 1, 2).ok());
}

}  // namespace
}  // namespace dynsparse::cuda
