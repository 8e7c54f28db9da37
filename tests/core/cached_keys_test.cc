// CachedKeys: each layer's keys are its live tokens plus the tokens with K/V
// there, built for a range of layers as one list; a layer whose keys are
// every position reports none (the attention then reads the cache whole).
#include "core/graph/cached_keys.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dynsparse {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(CachedKeysTest, EachLayerIsLivePlusItsPresentRows) {
  // Positions 0..7; layer 1 has K/V at 0 and 5, layer 2 at every position,
  // layer 3 at none.
  std::vector<std::vector<uint8_t>> present = {{},
                                               {1, 0, 0, 0, 0, 1, 0, 0},
                                               {1, 1, 1, 1, 1, 1, 1, 1},
                                               {0, 0, 0, 0, 0, 0, 0, 0}};
  const std::vector<int32_t> live = {2, 3, 7};
  CachedKeys keys;
  EXPECT_FALSE(keys.Covers(1));
  keys.Build(1, 4, live, 8, [&](int64_t l) { return present[l].data(); });
  EXPECT_FALSE(keys.Covers(0));
  EXPECT_TRUE(keys.Covers(1));
  EXPECT_TRUE(keys.Covers(3));
  EXPECT_FALSE(keys.Covers(4));
  EXPECT_THAT(keys.Keys(1), ElementsAre(0, 2, 3, 5, 7));
  EXPECT_THAT(keys.Keys(2), IsEmpty());  // Every position: no list.
  EXPECT_THAT(keys.Keys(3), ElementsAre(2, 3, 7));
  // The lists lie one after another in all(), so one copy stages them.
  EXPECT_THAT(keys.all(),
              ElementsAre(0, 2, 3, 5, 7, 0, 1, 2, 3, 4, 5, 6, 7, 2, 3, 7));
  EXPECT_EQ(keys.Keys(3).data(), keys.all().data() + 13);

  // A rebuild replaces the range; Clear drops it.
  keys.Build(3, 4, {1}, 8, [&](int64_t l) { return present[l].data(); });
  EXPECT_FALSE(keys.Covers(1));
  EXPECT_THAT(keys.Keys(3), ElementsAre(1));
  keys.Clear();
  EXPECT_FALSE(keys.Covers(3));
}

}  // namespace
}  // namespace dynsparse
