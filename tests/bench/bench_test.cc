// The latency benchmark behind `dynsparse bench` and the `latency` metric,
// on the CPU backend with a tiny random model (CI has no GPU).
#include "experiments/bench/bench.h"

#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "core/model_shapes.h"
#include "core/random_weights.h"
#include "experiments/metrics/latency_metric.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"

namespace dynsparse {
namespace {

class Dense : public Method {
 public:
  std::string name() const override { return "dense"; }
  absl::Status Attach(const ModelConfig&, Backend&) override {
    return absl::OkStatus();
  }
};

ModelConfig TinyLlama() {
  ModelShape shape;
  shape.vocab_size = 64;
  shape.hidden_size = 32;
  shape.intermediate_size = 48;
  shape.num_layers = 2;
  shape.num_heads = 4;
  shape.num_kv_heads = 2;
  return LlamaConfigFromShape(shape);
}

TEST(BenchTest, ReportsStableKeysAndConsistentNumbers) {
  const ModelConfig config = TinyLlama();
  const ModelWeights weights = RandomWeights(config, 3, DType::kF16);
  CpuBackend backend(1);
  Dense dense;
  BenchOptions o;
  o.prompt = 8;
  o.new_tokens = 5;
  o.repeats = 2;
  o.bandwidth_gbps = 10.0;
  absl::StatusOr<BenchResult> r = RunBench(config, weights, backend, dense, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->decode_ms.size(), 10u);  // new x repeats; warm-up dropped
  EXPECT_GT(r->ttft_ms, 0.0);
  EXPECT_LE(r->decode_ms_p10, r->decode_ms_median);
  EXPECT_LE(r->decode_ms_median, r->decode_ms_p90);
  EXPECT_EQ(r->dtype, "f16");
  EXPECT_EQ(r->device, "cpu");
  EXPECT_DOUBLE_EQ(r->floor_ms, r->bytes_per_step / 10e9 * 1e3);
  EXPECT_NEAR(r->achieved_gbps * r->decode_ms_median, r->bytes_per_step / 1e6,
              1e-9 * r->bytes_per_step);

  const nlohmann::json j = r->ToJson();
  for (const char* key :
       {"model", "device", "dtype", "batch", "prompt", "ttft_ms",
        "decode_ms_median", "decode_ms_p10", "decode_ms_p90", "achieved_gbps",
        "floor_ms", "git_sha", "kv_dtype"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["kv_dtype"], "f32");  // The CPU backend's cache.
  EXPECT_FALSE(j["git_sha"].get<std::string>().empty());
  EXPECT_EQ(j["decode_ms_steps"].get<std::vector<double>>(), r->decode_ms);
}

TEST(BenchTest, BytesPerStepCountsWeightsOnceAndTheCache) {
  const ModelConfig config = TinyLlama();
  const ModelWeights weights = RandomWeights(config, 3, DType::kBF16);
  // Everything but the token embedding (one row read per step), in bf16.
  const int64_t embedding = config.vocab_size * config.embed_dim();
  const double weight_bytes =
      2.0 * static_cast<double>(config.ParameterCount() - embedding);
  EXPECT_DOUBLE_EQ(DecodeBytesPerStep(config, weights, 0, DType::kF32),
                   weight_bytes);
  const double cache = 2.0 * 4.0 * static_cast<double>(config.num_layers) *
                       static_cast<double>(config.kv_dim()) * 100.0;
  EXPECT_DOUBLE_EQ(DecodeBytesPerStep(config, weights, 100, DType::kF32),
                   weight_bytes + cache);
  // An f16 cache is half the bytes.
  EXPECT_DOUBLE_EQ(DecodeBytesPerStep(config, weights, 100, DType::kF16),
                   weight_bytes + cache / 2);
}

TEST(BenchTest, BatchRunsThatManyRowsPerStep) {
  const ModelConfig config = TinyLlama();
  const ModelWeights weights = RandomWeights(config, 3, DType::kF32);
  CpuBackend backend(1);
  Dense dense;
  BenchOptions o;
  o.prompt = 4;
  o.new_tokens = 3;
  o.batch = 4;
  o.repeats = 1;
  o.bandwidth_gbps = 1.0;
  absl::StatusOr<BenchResult> r = RunBench(config, weights, backend, dense, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->tokens_per_s, 4e3 / r->decode_ms_median, 1e-6);
}

// Rows record every DYNSPARSE_CUDA_* switch that is set, and nothing else.
TEST(BenchTest, SwitchesListEveryCudaVariableThatIsSet) {
  ASSERT_EQ(setenv("DYNSPARSE_CUDA_BENCH_TEST_SWITCH", "0", 1), 0);
  ASSERT_EQ(setenv("DYNSPARSE_BENCH_TEST_OTHER", "1", 1), 0);
  std::map<std::string, std::string> set = BenchSwitches();
  EXPECT_EQ(set["DYNSPARSE_CUDA_BENCH_TEST_SWITCH"], "0");
  EXPECT_EQ(set.count("DYNSPARSE_BENCH_TEST_OTHER"), 0u);
  ASSERT_EQ(unsetenv("DYNSPARSE_CUDA_BENCH_TEST_SWITCH"), 0);
  ASSERT_EQ(unsetenv("DYNSPARSE_BENCH_TEST_OTHER"), 0);
  set = BenchSwitches();
  EXPECT_EQ(set.count("DYNSPARSE_CUDA_BENCH_TEST_SWITCH"), 0u);
}

TEST(BenchTest, RejectsNonPositiveSizes) {
  const ModelConfig config = TinyLlama();
  const ModelWeights weights = RandomWeights(config, 3, DType::kF32);
  CpuBackend backend(1);
  Dense dense;
  BenchOptions o;
  o.new_tokens = 0;
  EXPECT_EQ(RunBench(config, weights, backend, dense, o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The two token profiles time differently; asking for both is an error
// naming the flags.
TEST(BenchTest, RejectsBothTokenProfiles) {
  const ModelConfig config = TinyLlama();
  const ModelWeights weights = RandomWeights(config, 3, DType::kF32);
  CpuBackend backend(1);
  Dense dense;
  BenchOptions o;
  o.token_profile = true;
  o.token_profile_host = true;
  const absl::Status s = RunBench(config, weights, backend, dense, o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--token-profile-host"), std::string::npos) << s;
}

// Both decode loops time every step; a bad loop name, and the greedy loop
// with more than one row a step, are errors naming the flag.
TEST(BenchTest, DecodeLoopsAndTheirErrors) {
  const ModelConfig config = TinyLlama();
  const ModelWeights weights = RandomWeights(config, 3, DType::kF32);
  CpuBackend backend(1);
  Dense dense;
  BenchOptions o;
  o.prompt = 4;
  o.new_tokens = 3;
  o.repeats = 1;
  o.bandwidth_gbps = 10.0;
  for (const char* loop : {"", "greedy", "fixed"}) {
    o.decode_loop = loop;
    absl::StatusOr<BenchResult> r =
        RunBench(config, weights, backend, dense, o);
    ASSERT_TRUE(r.ok()) << loop << ": " << r.status();
    EXPECT_EQ(r->decode_loop, *loop ? loop : "greedy");
    EXPECT_EQ(r->decode_ms.size(), 3u) << loop;
    EXPECT_EQ(r->ToJson()["decode_loop"], r->decode_loop);
  }
  o.decode_loop = "sampled";
  absl::Status s = RunBench(config, weights, backend, dense, o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--decode-loop must be greedy or fixed"),
            std::string::npos)
      << s;
  o.decode_loop = "greedy";
  o.batch = 2;
  s = RunBench(config, weights, backend, dense, o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("needs --decode-loop fixed"), std::string::npos)
      << s;
  o.decode_loop = "";  // Batch 2 picks the fixed loop.
  absl::StatusOr<BenchResult> r = RunBench(config, weights, backend, dense, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->decode_loop, "fixed");
}

TEST(LatencyMetricTest, RowsCarryTheBenchNumbers) {
  MetricParams params({{"prompt", {6, 9}},
                       {"new_tokens", 3},
                       {"repeats", 1},
                       {"bandwidth_gbps", 5.0}},
                      "metrics[0]");
  absl::StatusOr<std::unique_ptr<Metric>> metric =
      LatencyMetric::Create(params);
  ASSERT_TRUE(metric.ok()) << metric.status();
  LoadedModel model;
  model.config = TinyLlama();
  model.weights = RandomWeights(model.config, 1, DType::kF32);
  model.source = "tiny";
  CpuBackend backend(1);
  Dense dense;
  MetricModel m;
  m.model = &model;
  m.backend = &backend;
  m.method = &dense;
  absl::StatusOr<std::vector<MetricRow>> rows = (*metric)->Run(m, nullptr);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::set<std::string> names;
  std::set<std::string> tasks;
  for (const MetricRow& row : *rows) {
    names.insert(row.metric);
    tasks.insert(row.task);
    EXPECT_GT(row.value, 0.0) << row.metric;
    EXPECT_EQ(row.details["model"], "tiny");
  }
  EXPECT_EQ(names,
            (std::set<std::string>{
                "ttft_ms", "decode_ms_median", "decode_ms_p10", "decode_ms_p90",
                "tokens_per_s", "achieved_gbps", "floor_ms"}));
  // One set of rows per listed prompt length.
  EXPECT_EQ(rows->size(), 14u);
  EXPECT_EQ(tasks, (std::set<std::string>{"prompt6_batch1", "prompt9_batch1"}));
}

TEST(LatencyMetricTest, BadParametersNameTheirPath) {
  MetricParams params({{"new_tokens", 0}}, "metrics[2]");
  absl::StatusOr<std::unique_ptr<Metric>> metric =
      LatencyMetric::Create(params);
  ASSERT_FALSE(metric.ok());
  EXPECT_NE(
      metric.status().message().find("metrics[2].new_tokens: must be >= 1"),
      std::string::npos)
      << metric.status();
}

}  // namespace
}  // namespace dynsparse
