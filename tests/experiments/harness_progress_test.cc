// Sweep progress: plain lines per job when stderr is not a terminal, a
// redrawn bar with ETA when it is.
#include <sstream>

#include "experiments/harness/progress.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dynsparse {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(SweepProgressTest, PlainLinesWithoutATerminal) {
  std::ostringstream out;
  SweepProgress progress(out, /*terminal=*/false, 2);
  progress.BeginJob(0, "m dense");
  progress.Metric("perplexity", 5, 10);
  progress.EndJob("ok");
  progress.BeginJob(1, "m toy keep=0.5");
  progress.EndJob("1 of 2 metric(s) failed");
  progress.Finish();
  EXPECT_THAT(out.str(),
              ContainsRegex("^\\[1/2\\] m dense: ok \\([0-9.]+ s\\)\n"
                            "\\[2/2\\] m toy keep=0.5: 1 of 2 "
                            "metric\\(s\\) failed \\([0-9.]+ s\\)\n$"));
  EXPECT_THAT(out.str(), Not(HasSubstr("\033")));  // No escape codes in logs.
}

TEST(SweepProgressTest, ABarWithEtaOnATerminal) {
  std::ostringstream out;
  SweepProgress progress(out, /*terminal=*/true, 4);
  progress.BeginJob(0, "m dense");
  progress.EndJob("ok");
  progress.BeginJob(1, "m toy");
  EXPECT_THAT(out.str(), HasSubstr("\r\033[K[######..................] 1/4 "
                                   "jobs  ETA "));
  EXPECT_THAT(out.str(), HasSubstr("  m toy"));
}

TEST(SweepProgressTest, DurationsReadLikeAClock) {
  EXPECT_EQ(SweepProgress::FormatDuration(12.4), "12s");
  EXPECT_EQ(SweepProgress::FormatDuration(185), "3m05s");
  EXPECT_EQ(SweepProgress::FormatDuration(3720), "1h02m");
}

}  // namespace
}  // namespace dynsparse
