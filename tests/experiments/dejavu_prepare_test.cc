// The harness step before each job: the runner fails a job whose prepare
// step fails (and only that job), and PrepareDejavuJob calibrates + trains a
// missing predictors folder (keeping the predictors, dropping the data)
// while leaving every other job alone.
#include <filesystem>
#include <fstream>

#include "experiments/cli/commands.h"
#include "experiments/harness/results_log.h"
#include "experiments/harness/runner.h"
#include "gtest/gtest.h"
#include "methods/dejavu/predictor_set.h"
#include "methods/dejavu/train_device.h"
#include "tests/experiments/harness_fakes.h"
#include "tests/test_paths.h"

namespace dynsparse {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(HarnessPrepareTest, AFailedPrepareFailsOnlyThatJob) {
  testing::TempDir dir;
  auto loaded = LoadExperimentConfig(
      dir.Write(
          "p.yaml",
          "name: p\nmodel: {path: tests/fixtures/models/tiny-llama-chat}\n"
          "methods:\n  - {name: toy, keep: [0.5, 0.25]}\n"
          "metrics:\n  - {name: fake, task: a}\n"),
      {}, {testing::FakeMethods(), testing::FakeMetrics()});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  RunOptions options;
  options.out_dir = dir.path("out");
  int prepared = 0;
  options.prepare = [&](const Job& job) {
    ++prepared;
    if (job.method.params.value("keep", 1.0) == 0.25) {
      return absl::NotFoundError("no predictors for keep 0.25");
    }
    return absl::OkStatus();
  };
  auto summary = RunExperiment(
      *loaded, testing::FakeMetrics(),
      [](const Job& job) -> absl::StatusOr<OpenedJob> {
        auto method = std::make_shared<testing::ToyMethod>(
            job.method.params.value("keep", 1.0));
        OpenedJob opened;
        opened.model.method = method.get();
        opened.owner = method;
        return opened;
      },
      options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(prepared, 2);
  EXPECT_EQ(summary->pairs_ok, 1u);
  EXPECT_EQ(summary->pairs_failed, 1u);
  bool seen = false;
  for (const std::string& file : ListResultsFiles(dir.path("out"))) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      const json l = json::parse(line);
      if (l["kind"] == "result" && l["status"] == "error") {
        EXPECT_EQ(l["error"],
                  "opening the model: preparing the job: no predictors for "
                  "keep 0.25");
        seen = true;
      }
    }
  }
  EXPECT_TRUE(seen);
}

Job DejavuJob(const std::string& model, json params) {
  Job job;
  job.model.path = model;
  job.model.threads = 1;
  job.method.name = "dejavu";
  job.method.params = std::move(params);
  return job;
}

TEST(PrepareDejavuJobTest, LeavesJobsWithoutMissingPredictorsAlone) {
  std::ostringstream log;
  Job dense;
  dense.method.name = "dense";
  EXPECT_TRUE(PrepareDejavuJob(dense, log).ok());
  // Neither would open the (missing) model: nothing to calibrate.
  EXPECT_TRUE(PrepareDejavuJob(
                  DejavuJob("no/such/model", {{"predictors", "random:8"}}), log)
                  .ok());
  EXPECT_TRUE(PrepareDejavuJob(
                  DejavuJob("no/such/model", {{"selector", "oracle"},
                                              {"predictors", "no/such/dir"}}),
                  log)
                  .ok());
  EXPECT_TRUE(log.str().empty());
  // A missing folder with a predictor selector is calibrated: here the
  // model cannot open, and the error says so.
  const absl::Status s = PrepareDejavuJob(
      DejavuJob("no/such/model", {{"predictors", "no/such/dir"}}), log);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no/such/model"), std::string::npos) << s;
}

TEST(PrepareDejavuJobTest, CalibratesAndTrainsAMissingFolder) {
  const std::string dir =
      (fs::temp_directory_path() / absl::StrCat("dejavu_prep_", getpid()))
          .string();
  fs::remove_all(dir);
  const Job job = DejavuJob(
      testing::SourcePath("models/ref-opt"),
      {{"predictors", dir},
       {"calib_corpus", testing::SourcePath("models/ref-opt/README.md")},
       {"calib_tokens", 600},
       {"mlp_rank", 16},
       {"head_rank", 8},
       {"mlp_keep", 0.25}});
  std::ostringstream log;
  const absl::Status s = PrepareDejavuJob(job, log);
  ASSERT_TRUE(s.ok()) << s << "\n" << log.str();
  EXPECT_TRUE(fs::exists(dir + "/predictors.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/calibration")) << "data should be dropped";
  std::ifstream in(dir + "/predictors.json");
  const json meta = json::parse(in);
  EXPECT_EQ(meta["mlp_rank"], 16);
  EXPECT_EQ(meta["head_rank"], 8);
  // 600 text tokens in windows of 511 + BOS: 2 windows.
  EXPECT_EQ(meta["calibration"]["tokens"], 602);
  // Trained where the job's model runs (no train_device given).
  EXPECT_EQ(meta["training"]["mlp"]["device"], "cpu");
  EXPECT_EQ(meta["training"]["heads"]["device"], "cpu");
  // Second time: the folder exists, nothing is done.
  std::ostringstream again;
  EXPECT_TRUE(PrepareDejavuJob(job, again).ok());
  EXPECT_TRUE(again.str().empty());
  fs::remove_all(dir);
}

TEST(PrepareDejavuJobTest, AMissingTrainDeviceFailsBeforeCalibrating) {
  if (CheckTrainDevice("cuda").ok()) {
    GTEST_SKIP() << "this machine trains on CUDA";
  }
  const std::string dir =
      (fs::temp_directory_path() / absl::StrCat("dejavu_nogpu_", getpid()))
          .string();
  fs::remove_all(dir);
  std::ostringstream log;
  const absl::Status s = PrepareDejavuJob(
      DejavuJob(testing::SourcePath("models/ref-opt"),
                {{"predictors", dir}, {"train_device", "cuda"}}),
      log);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("train_device 'cuda'"), std::string::npos) << s;
  EXPECT_TRUE(log.str().empty()) << log.str();
  EXPECT_FALSE(fs::exists(dir));
}

}  // namespace
}  // namespace dynsparse
