// Summary statistics of per-example scores shared by the metrics: the mean
// with lm-eval's standard error, and the Wilson score interval of a
// binomial proportion (for accuracies over few trials, where mean +- stderr
// is meaningless at 0 or 1).
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_SAMPLE_STATS_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_SAMPLE_STATS_H_

#include <cstdint>
#include <utility>
#include <vector>

namespace dynsparse {

// Mean and lm-eval's mean_stderr (sample stddev / sqrt(n)); stderr 0 below
// two values.
std::pair<double, double> MeanStderr(const std::vector<double>& x);

// The Wilson score interval (low, high) of `successes` out of `trials` at
// normal quantile `z` (1.96: 95%). (0, 1) when there are no trials.
std::pair<double, double> WilsonInterval(int64_t successes, int64_t trials,
                                         double z = 1.959963984540054);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_SAMPLE_STATS_H_
