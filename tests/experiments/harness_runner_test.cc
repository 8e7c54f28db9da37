// The runner on fake metrics and a fake model opener: rows carry every
// field, finished pairs are skipped, failures are recorded and the rest go
// on, torn lines and jobs in flight at a crash are repaired on restart, the
// stop flag ends the sweep after the job in flight, shards split the work.
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "experiments/harness/results_log.h"
#include "experiments/harness/runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/experiments/harness_fakes.h"

namespace dynsparse {
namespace {

using nlohmann::json;
using testing::FakeMethods;
using testing::FakeMetrics;
using testing::TempDir;
using testing::ToyMethod;
namespace fs = std::filesystem;

constexpr char kModel[] = "tests/fixtures/models/tiny-llama-chat";

LoadedConfig Config(const TempDir& dir, const std::string& extra_metric = "",
                    std::vector<std::string> sets = {}) {
  const std::string yaml = absl::StrCat(
      "name: sweep\n"
      "model:\n"
      "  - {path: ",
      kModel,
      ", label: m0}\n"
      "  - {path: ",
      kModel,
      ", label: m1}\n"
      "methods:\n"
      "  - {name: dense}\n"
      "  - {name: toy, keep: [0.5, 0.25]}\n"
      "metrics:\n"
      "  - {name: fake, task: a",
      extra_metric,
      "}\n"
      "  - {name: fake, task: b, rows: 2}\n");
  auto loaded = LoadExperimentConfig(dir.Write("sweep.yaml", yaml), sets,
                                     {FakeMethods(), FakeMetrics()});
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  return *loaded;
}

// Opens nothing: the fake metric only needs the toy method's keep.
JobOpener FakeOpener(std::function<void(const Job&)> hook = nullptr) {
  return [hook](const Job& job) -> absl::StatusOr<OpenedJob> {
    if (hook) hook(job);
    if (job.model.label == "broken") {
      return absl::NotFoundError("broken: no weights");
    }
    const double keep = job.method.params.value("keep", 1.0);
    auto method = std::make_shared<ToyMethod>(keep);
    OpenedJob opened;
    opened.model.method = method.get();
    opened.model.device = job.model.device;
    opened.model.dtype = job.model.dtype;
    opened.owner = method;
    return opened;
  };
}

RunOptions Options(const TempDir& dir) {
  RunOptions o;
  o.out_dir = dir.path("out");
  o.git_sha = "abc123";
  return o;
}

std::vector<json> Lines(const std::string& dir) {
  std::vector<json> out;
  for (const std::string& file : ListResultsFiles(dir)) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) out.push_back(json::parse(line));
  }
  return out;
}

// pair -> number of complete ok groups.
std::map<std::string, int> OkGroups(const std::string& dir) {
  std::map<std::string, int> count;
  for (const json& l : Lines(dir)) {
    if (l["kind"] == "result" && l["status"] == "ok" && l["row"] == 0) {
      ++count[l["pair"].get<std::string>()];
    }
  }
  return count;
}

void ExpectEveryPairOnce(const std::string& dir, size_t pairs) {
  const auto groups = OkGroups(dir);
  EXPECT_EQ(groups.size(), pairs);
  for (const auto& [pair, n] : groups) EXPECT_EQ(n, 1) << pair;
}

TEST(HarnessRunnerTest, RunsEveryJobAndWritesEveryField) {
  TempDir dir;
  const LoadedConfig config = Config(dir);
  auto summary =
      RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->jobs, 6u);
  EXPECT_EQ(summary->pairs_ok, 12u);
  EXPECT_EQ(summary->pairs_failed, 0u);
  ExpectEveryPairOnce(dir.path("out"), 12);
  EXPECT_TRUE(fs::exists(dir.path("out/resolved.yaml")));

  const json* row = nullptr;
  std::vector<json> lines = Lines(dir.path("out"));
  for (const json& l : lines) {
    if (l["kind"] == "result" && l["job"] == "m1|cpu|f32|toy keep=0.25" &&
        l["metric_index"] == 1 && l["row"] == 1) {
      row = &l;
    }
  }
  ASSERT_NE(row, nullptr);
  EXPECT_EQ((*row)["model"], "m1");
  EXPECT_EQ((*row)["model_path"], kModel);
  EXPECT_EQ((*row)["method"], "toy");
  EXPECT_EQ((*row)["params"], json({{"keep", 0.25}}));
  EXPECT_EQ((*row)["metric"], "value2");
  EXPECT_EQ((*row)["metric_entry"], "fake");
  EXPECT_EQ((*row)["task"], "b");
  EXPECT_DOUBLE_EQ((*row)["value"].get<double>(), 3.5);
  EXPECT_DOUBLE_EQ((*row)["stderr"].get<double>(), 0.5);
  EXPECT_EQ((*row)["n"], 7);
  EXPECT_TRUE((*row)["wall_s"].is_number());
  EXPECT_EQ((*row)["git_sha"], "abc123");
  EXPECT_EQ((*row)["config_hash"], config.hash);
  EXPECT_EQ((*row)["device"], "cpu");
  EXPECT_EQ((*row)["dtype"], "f32");
  EXPECT_EQ((*row)["protocol"], "fake protocol of task b");
  EXPECT_EQ((*row)["status"], "ok");
  EXPECT_EQ((*row)["rows"], 2);
}

TEST(HarnessRunnerTest, ASecondRunSkipsFinishedPairs) {
  TempDir dir;
  const LoadedConfig config = Config(dir);
  ASSERT_TRUE(
      RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir)).ok());
  const size_t lines = Lines(dir.path("out")).size();
  int opened = 0;
  auto again =
      RunExperiment(config, FakeMetrics(),
                    FakeOpener([&](const Job&) { ++opened; }), Options(dir));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->jobs_skipped, 6u);
  EXPECT_EQ(opened, 0);
  EXPECT_EQ(Lines(dir.path("out")).size(), lines);
}

TEST(HarnessRunnerTest, AnImpossibleJobIsRecordedAndTheOthersFinish) {
  TempDir dir;
  const LoadedConfig config = Config(dir, ", fail_keep: 0.25");
  auto summary =
      RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->pairs_failed, 2u);  // metrics[0] of keep=0.25, 2 models.
  EXPECT_EQ(summary->pairs_ok, 10u);
  int errors = 0;
  for (const json& l : Lines(dir.path("out"))) {
    if (l["kind"] == "result" && l["status"] == "error") {
      ++errors;
      EXPECT_EQ(l["params"], json({{"keep", 0.25}}));
      EXPECT_EQ(l["error"], "keep 0.25 is impossible");
      EXPECT_EQ(l["metric_index"], 0);
    }
  }
  EXPECT_EQ(errors, 2);
  // Failures are final unless asked: a re-run does not retry them ...
  auto again = RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->pairs_failed, 0u);
  // ... and --retry-errors runs exactly the failed pairs again.
  RunOptions retry = Options(dir);
  retry.retry_errors = true;
  auto retried = RunExperiment(config, FakeMetrics(), FakeOpener(), retry);
  ASSERT_TRUE(retried.ok());
  EXPECT_EQ(retried->pairs_failed, 2u);
  EXPECT_EQ(retried->pairs_ok, 0u);
}

TEST(HarnessRunnerTest, AModelThatCannotOpenFailsEachOfItsMetrics) {
  TempDir dir;
  const LoadedConfig config = Config(dir, "", {"model[1].label=broken"});
  auto summary =
      RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir));
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->pairs_failed, 6u);
  EXPECT_EQ(summary->pairs_ok, 6u);
  for (const json& l : Lines(dir.path("out"))) {
    if (l["kind"] == "result" && l["model"] == "broken") {
      EXPECT_EQ(l["status"], "error");
      EXPECT_EQ(l["error"], "opening the model: broken: no weights");
    }
  }
}

// Cuts the file to `keep` bytes, as a kill during a write leaves it.
void Truncate(const std::string& path, size_t keep) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  in.close();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << text.substr(0, keep);
}

TEST(HarnessRunnerTest, ATornLastLineIsDroppedAndItsPairRunAgain) {
  TempDir dir;
  const LoadedConfig config = Config(dir);
  ASSERT_TRUE(
      RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir)).ok());
  const std::string file = dir.path("out/results.jsonl");
  // Cut inside the last result group: its second row is half written.
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  in.close();
  size_t cut = text.rfind("\"row\":1");
  ASSERT_NE(cut, std::string::npos);
  Truncate(file, cut);

  auto resumed =
      RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir));
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->pairs_ok, 1u);     // Only the torn pair.
  EXPECT_EQ(resumed->interrupted, 1u);  // Its job was in flight.
  ExpectEveryPairOnce(dir.path("out"), 12);
  // Every line is whole JSON again.
  auto lines = ReadResultsFile(file);
  ASSERT_TRUE(lines.ok());
}

TEST(HarnessRunnerTest, AJobInFlightIsRecordedAsInterruptedAndRunAgain) {
  TempDir dir;
  const LoadedConfig config = Config(dir);
  ASSERT_TRUE(
      RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir)).ok());
  const std::string file = dir.path("out/results.jsonl");
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  in.close();
  // Keep job 3's start line and its first group only: it died mid-job.
  const size_t start = text.find("\"job_index\":3,\"kind\":\"start\"");
  ASSERT_NE(start, std::string::npos);
  const size_t after_start = text.find('\n', start) + 1;
  const size_t after_group = text.find('\n', after_start) + 1;
  Truncate(file, after_group);

  auto resumed =
      RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir));
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->interrupted, 1u);
  EXPECT_EQ(resumed->jobs_skipped, 3u);
  ExpectEveryPairOnce(dir.path("out"), 12);
  int interrupted = 0;
  for (const json& l : Lines(dir.path("out"))) {
    if (l["kind"] == "interrupted") {
      ++interrupted;
      EXPECT_EQ(l["job_index"], 3);
    }
  }
  EXPECT_EQ(interrupted, 1);
}

TEST(HarnessRunnerTest, TheStopFlagEndsTheSweepAfterTheJobInFlight) {
  TempDir dir;
  const LoadedConfig config = Config(dir);
  std::atomic<bool> stop{false};
  RunOptions options = Options(dir);
  options.stop = &stop;
  auto first =
      RunExperiment(config, FakeMetrics(), FakeOpener([&](const Job& job) {
                      if (job.index == 2) stop = true;
                    }),
                    options);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->stopped);
  EXPECT_EQ(OkGroups(dir.path("out")).size(), 6u);  // Jobs 0-2, whole.
  stop = false;
  auto rest = RunExperiment(config, FakeMetrics(), FakeOpener(), options);
  ASSERT_TRUE(rest.ok());
  EXPECT_FALSE(rest->stopped);
  EXPECT_EQ(rest->interrupted, 0u);
  ExpectEveryPairOnce(dir.path("out"), 12);
}

TEST(HarnessRunnerTest, ShardsWriteTheirOwnFilesAndCoverTheSweep) {
  TempDir dir;
  const LoadedConfig config = Config(dir);
  for (int i = 0; i < 4; ++i) {
    RunOptions options = Options(dir);
    options.shard = {i, 4};
    auto summary = RunExperiment(config, FakeMetrics(), FakeOpener(), options);
    ASSERT_TRUE(summary.ok());
    EXPECT_EQ(summary->jobs, i < 2 ? 2u : 1u);
    EXPECT_EQ(fs::path(summary->results_file).filename(),
              absl::StrCat("results-shard", i, "-of-4.jsonl"));
  }
  ExpectEveryPairOnce(dir.path("out"), 12);
  // An unsharded run afterwards finds everything done.
  auto all = RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir));
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->jobs_skipped, 6u);
}

TEST(HarnessRunnerTest, ADamagedLineMidFileIsAnErrorNamingTheLine) {
  TempDir dir;
  const LoadedConfig config = Config(dir);
  ASSERT_TRUE(
      RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir)).ok());
  const std::string file = dir.path("out/results.jsonl");
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  in.close();
  text.insert(text.find('\n') + 1, "{\"kind\": [1, 2\n");  // Line 2.
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
  auto again = RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(),
            file +
                ":2: not a JSON object; the file is damaged mid-way (fix "
                "or remove that line)");
}

// A metric that throws (a bug) fails its job; the sweep goes on.
class ThrowingMetric : public Metric {
 public:
  std::string Protocol() const override { return "throws"; }
  absl::StatusOr<std::vector<MetricRow>> Run(const MetricModel&,
                                             const ProgressFn&) override {
    throw std::runtime_error("boom");
  }
};

TEST(HarnessRunnerTest, AnExceptionInAMetricFailsOnlyThatPair) {
  TempDir dir;
  const LoadedConfig config = Config(dir);
  std::vector<MetricInfo> table = FakeMetrics();
  table[0].create =
      [](const MetricParams& p) -> absl::StatusOr<std::unique_ptr<Metric>> {
    if (p.path() == "metrics[1]") return std::make_unique<ThrowingMetric>();
    return FakeMetrics()[0].create(p);
  };
  auto summary = RunExperiment(config, table, FakeOpener(), Options(dir));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->pairs_ok, 6u);
  EXPECT_EQ(summary->pairs_failed, 6u);
  for (const json& l : Lines(dir.path("out"))) {
    if (l["kind"] == "result" && l["metric_index"] == 1) {
      EXPECT_EQ(l["error"], "uncaught exception: boom");
    }
  }
}

TEST(HarnessRunnerTest, AMetricWithNoRowsFailsOnlyThatPair) {
  TempDir dir;
  const LoadedConfig config = Config(dir, ", rows: 0");
  auto summary =
      RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->pairs_ok, 6u);
  EXPECT_EQ(summary->pairs_failed, 6u);
  int failed = 0;
  for (const json& l : Lines(dir.path("out"))) {
    if (l["kind"] == "result" && l["metric_index"] == 0) {
      EXPECT_EQ(l["status"], "error");
      EXPECT_EQ(l["error"], "the metric returned no rows");
      ++failed;
    }
  }
  EXPECT_EQ(failed, 6);
}

TEST(HarnessRunnerTest, AnOutFolderThatCannotBeCreatedIsAnError) {
  TempDir dir;
  dir.Write("blocker", "a file where a folder should go\n");
  RunOptions options = Options(dir);
  options.out_dir = dir.path("blocker") + "/out";
  auto summary =
      RunExperiment(Config(dir), FakeMetrics(), FakeOpener(), options);
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(
      std::string(summary.status().message()),
      ::testing::StartsWith(options.out_dir + ": cannot create the folder: "));
}

// A results file that cannot grow (a file-size limit makes write() fail with
// EFBIG): the sweep stops with an error naming the file, not a silent gap.
TEST(HarnessRunnerTest, AResultsWriteFailureIsAnErrorNamingTheFile) {
  TempDir dir;
  const LoadedConfig config = Config(dir);
  rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  void (*old_handler)(int) = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 1024;  // Room for the first lines only.
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  auto summary =
      RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir));
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(std::string(summary.status().message()),
              ::testing::StartsWith(dir.path("out/results.jsonl") +
                                    ": write failed: "));
}

// fsync of a character device fails (EINVAL on Linux), so a results file
// that is a link to /dev/null takes every write and fails the first sync.
TEST(HarnessRunnerTest, AResultsSyncFailureIsAnErrorNamingTheFile) {
  TempDir dir;
  const LoadedConfig config = Config(dir);
  std::filesystem::create_directories(dir.path("out"));
  std::filesystem::create_symlink("/dev/null", dir.path("out/results.jsonl"));
  auto summary =
      RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir));
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(std::string(summary.status().message()),
              ::testing::StartsWith(dir.path("out/results.jsonl") +
                                    ": fsync failed: "));
}

TEST(HarnessRunnerTest, OneWriterPerResultsFile) {
  TempDir dir;
  const LoadedConfig config = Config(dir);
  auto first = ResultsLog::Open(dir.path("out"), "results.jsonl", config.hash);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second =
      RunExperiment(config, FakeMetrics(), FakeOpener(), Options(dir));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().message(),
            dir.path("out/results.jsonl") +
                ": another dynsparse run is writing it (same folder and "
                "shard); wait for it or use another --out");
  // Another shard of the same folder may run at the same time.
  RunOptions shard = Options(dir);
  shard.shard = {1, 2};
  EXPECT_TRUE(RunExperiment(config, FakeMetrics(), FakeOpener(), shard).ok());
}

TEST(HarnessRunnerTest, ResultsOfAnotherConfigAreNotMixedIn) {
  TempDir dir;
  ASSERT_TRUE(
      RunExperiment(Config(dir), FakeMetrics(), FakeOpener(), Options(dir))
          .ok());
  const LoadedConfig other = Config(dir, "", {"seed=5"});
  auto summary =
      RunExperiment(other, FakeMetrics(), FakeOpener(), Options(dir));
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(std::string(summary.status().message()),
              ::testing::HasSubstr("holds results of another config"));
}

}  // namespace
}  // namespace dynsparse
