// The `longctx` metric of experiment configs: passkey retrieval (task:
// passkey, with `context` lengths and `depth` fractions as lists) or a
// LongBench-style jsonl file (task: longbench; fields context, input,
// answers[, all_classes]) scored by qa_f1, rouge, classification or code_sim.
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_LONGCTX_METRIC_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_LONGCTX_METRIC_H_

#include "experiments/metrics/metric.h"

namespace dynsparse {

MetricInfo LongctxMetricInfo();

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_LONGCTX_METRIC_H_
