// The revived rows' attention plans its key splits on the host: tiles of
// 16/32/64 rows, the keys each tile sees, and the most splits whose blocks
// with work fill one wave.
#include "kernels/cuda/pipelined_split_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace dynsparse::cuda {
namespace {

using ::testing::ElementsAre;

constexpr int kH200Sms = 132;

TEST(PipelinedSplitPlanTest, TileRowsFollowTheRowCount) {
  EXPECT_EQ(PipelinedTileRows(1), 16);
  EXPECT_EQ(PipelinedTileRows(16), 16);
  EXPECT_EQ(PipelinedTileRows(17), 32);
  EXPECT_EQ(PipelinedTileRows(32), 32);
  EXPECT_EQ(PipelinedTileRows(33), 64);
  EXPECT_EQ(PipelinedTileRows(255), 64);
}

TEST(PipelinedSplitPlanTest, TileKeysEndAtEachTilesLastPosition) {
  // 40 rows: tiles of 64, so one tile; its largest position decides.
  std::vector<int32_t> positions(40);
  std::iota(positions.begin(), positions.end(), 100);
  EXPECT_THAT(PipelinedTileKeys(positions, {}, 1000), ElementsAre(140));
  // 100 rows spread over 1000 keys: two tiles of 64 rows.
  positions.resize(100);
  for (int i = 0; i < 100; ++i) positions[i] = 10 * i + 9;
  EXPECT_THAT(PipelinedTileKeys(positions, {}, 1000), ElementsAre(640, 1000));
  // max_keys caps what a tile sees.
  EXPECT_THAT(PipelinedTileKeys(positions, {}, 700), ElementsAre(640, 700));
  // Rows need not be sorted: the tile's largest position counts.
  positions[0] = 999;
  EXPECT_THAT(PipelinedTileKeys(positions, {}, 1000), ElementsAre(1000, 1000));
}

TEST(PipelinedSplitPlanTest, TileKeysCountListedRowsAtOrBeforeTheTile) {
  const std::vector<int32_t> keys = {0, 4, 8, 12, 16, 20};  // cache rows
  const std::vector<int32_t> positions = {3, 8, 9};         // one tile of 16
  EXPECT_THAT(PipelinedTileKeys(positions, keys, 6), ElementsAre(3));
  EXPECT_THAT(PipelinedTileKeys(positions, keys, 2), ElementsAre(2));
  const std::vector<int32_t> early = {2};
  EXPECT_THAT(PipelinedTileKeys(early, keys, 6), ElementsAre(1));
}

TEST(PipelinedSplitPlanTest, SpanIsWholeStages) {
  EXPECT_EQ(KeySplitSpan(16384, 8), 2048);
  EXPECT_EQ(KeySplitSpan(16384, 9), 1856);  // 1820.4 rounded up to 64s
  EXPECT_EQ(KeySplitSpan(100, 1), 128);
}

// Rows at the end of the keys: every tile sees every key, so the count is
// the even division of one wave (two blocks an SM) over the tiles.
TEST(PipelinedSplitPlanTest, RowsAtTheEndFillOneWave) {
  // 16 rows (one tile) of 32 heads over 16k keys: 8 splits make 256 blocks;
  // 9 would make 288 > 264 (h200_run73: 9 took 297 us, 8 took 191).
  EXPECT_EQ(PipelinedSplitCount({16384}, 32, 16384, kH200Sms), 8);
  // 200 rows: four tiles, 128 (tile, head) blocks a split.
  EXPECT_EQ(
      PipelinedSplitCount({16384, 16384, 16384, 16384}, 32, 16384, kH200Sms),
      2);
  // Tiles that fill the wave alone, or no keys to split: one split.
  EXPECT_EQ(
      PipelinedSplitCount(std::vector<int64_t>(9, 16384), 32, 16384, kH200Sms),
      1);
  EXPECT_EQ(PipelinedSplitCount({100}, 32, 100, kH200Sms), 1);
  EXPECT_EQ(PipelinedSplitCount({}, 32, 16384, kH200Sms), 1);
}

TEST(PipelinedSplitPlanTest, SplitsNeverShorterThan128Keys) {
  // One tile of one head could take 264 splits; 1000 keys allow 8.
  EXPECT_EQ(PipelinedSplitCount({1000}, 1, 1000, kH200Sms), 8);
  EXPECT_GE(KeySplitSpan(1000, 8), 128);
}

// Revived rows spread over the context: early tiles see fewer keys, so
// their splits past those keys hold no work and more splits fit the wave.
TEST(PipelinedSplitPlanTest, SpreadRowsGetShorterSplits) {
  // 128 rows: the first tile sees half the keys. An even division gives 4
  // splits of 4096 keys (8 blocks a head); counting only blocks with work,
  // 5 splits of 3328 make 3 + 5.
  const std::vector<int64_t> two_tiles = {8192, 16384};
  EXPECT_EQ(PipelinedSplitCount({16384, 16384}, 32, 16384, kH200Sms), 4);
  EXPECT_EQ(PipelinedSplitCount(two_tiles, 32, 16384, kH200Sms), 5);
  // 160 rows over thirds: 3 splits of 5504 keys (1 + 2 + 3 blocks a head)
  // instead of 2 of 8192.
  EXPECT_EQ(PipelinedSplitCount({5461, 10922, 16384}, 32, 16384, kH200Sms), 3);
  // Whatever the count, the blocks with work fit one wave.
  for (const std::vector<int64_t>& tiles :
       {two_tiles, std::vector<int64_t>{5461, 10922, 16384},
        std::vector<int64_t>{100, 4000, 9000, 16384}}) {
    const int64_t splits = PipelinedSplitCount(tiles, 32, 16384, kH200Sms);
    const int64_t span = KeySplitSpan(16384, splits);
    int64_t blocks = 0;
    for (int64_t keys : tiles)
      blocks += std::max<int64_t>(1, (keys + span - 1) / span);
    EXPECT_LE(blocks * 32, 2 * kH200Sms) << splits << " splits";
  }
}

}  // namespace
}  // namespace dynsparse::cuda
