// Fake method and metric tables for the harness tests: the runner and the
// config loader take their tables by reference, so these tests need neither
// real metrics nor a model.
#ifndef DYNSPARSE_TESTS_EXPERIMENTS_HARNESS_FAKES_H_
#define DYNSPARSE_TESTS_EXPERIMENTS_HARNESS_FAKES_H_

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "experiments/metrics/metric.h"
#include "gtest/gtest.h"
#include "methods/registry.h"

namespace dynsparse::testing {

// "toy": keep in (0, 1], mode a|b. Selects everything; it only carries keep.
class ToyMethod : public Method {
 public:
  explicit ToyMethod(double keep) : keep_(keep) {}
  std::string name() const override { return "toy"; }
  absl::Status Attach(const ModelConfig&, Backend&) override {
    return absl::OkStatus();
  }
  double keep() const { return keep_; }

 private:
  double keep_;
};

inline const std::vector<MethodInfo>& FakeMethods() {
  static const auto* const kTable = new std::vector<MethodInfo>{
      {"dense",
       "baseline",
       {},
       [](const MethodArgs&) {
         return absl::StatusOr<std::unique_ptr<Method>>(
             std::make_unique<ToyMethod>(1.0));
       }},
      {"toy",
       "carries keep",
       {"keep", "mode"},
       [](const MethodArgs& args) -> absl::StatusOr<std::unique_ptr<Method>> {
         auto keep = args.GetDouble("keep", 1.0);
         if (!keep.ok()) return keep.status();
         (void)args.GetString("mode", "a");
         if (*keep <= 0 || *keep > 1) {
           return absl::InvalidArgumentError(
               absl::StrCat("keep must be in (0, 1], got ", *keep));
         }
         return std::make_unique<ToyMethod>(*keep);
       }},
  };
  return *kTable;
}

// "fake": value = 10 * the toy method's keep; fails when keep == fail_keep;
// sleeps sleep_ms; task a|b; rows: 1 or 2 (the second is "value2").
class FakeMetric : public Metric {
 public:
  FakeMetric(std::string task, double fail_keep, int64_t sleep_ms, int64_t rows)
      : task_(std::move(task)),
        fail_keep_(fail_keep),
        sleep_ms_(sleep_ms),
        rows_(rows) {}
  std::string Protocol() const override {
    return absl::StrCat("fake protocol of task ", task_);
  }
  absl::StatusOr<std::vector<MetricRow>> Run(
      const MetricModel& model, const ProgressFn& progress) override {
    const auto* toy = dynamic_cast<const ToyMethod*>(model.method);
    const double keep = toy != nullptr ? toy->keep() : 1.0;
    if (sleep_ms_ > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    }
    if (progress) progress(1, 1);
    if (keep == fail_keep_) {
      return absl::InvalidArgumentError(
          absl::StrCat("keep ", keep, " is impossible"));
    }
    std::vector<MetricRow> rows(rows_);
    for (int64_t i = 0; i < rows_; ++i) {
      rows[i].metric = i == 0 ? "value" : "value2";
      rows[i].task = task_;
      rows[i].value = 10 * keep + i;
      rows[i].stderr_value = 0.5;
      rows[i].n = 7;
    }
    return rows;
  }

 private:
  std::string task_;
  double fail_keep_;
  int64_t sleep_ms_;
  int64_t rows_;
};

inline const std::vector<MetricInfo>& FakeMetrics() {
  static const auto* const kTable = new std::vector<MetricInfo>{
      {"fake",
       "test metric",
       {"task", "fail_keep", "sleep_ms", "rows"},
       [](const MetricParams& p) -> absl::StatusOr<std::unique_ptr<Metric>> {
         auto task = p.GetString("task", "a");
         if (!task.ok()) return task.status();
         if (*task != "a" && *task != "b") {
           return absl::InvalidArgumentError(absl::StrCat(
               p.path(), ".task: unknown task '", *task, "' (valid: a, b)"));
         }
         auto fail = p.GetDouble("fail_keep", -1);
         if (!fail.ok()) return fail.status();
         auto sleep = p.GetInt("sleep_ms", 0);
         if (!sleep.ok()) return sleep.status();
         auto rows = p.GetInt("rows", 1);
         if (!rows.ok()) return rows.status();
         return std::make_unique<FakeMetric>(*task, *fail, *sleep, *rows);
       }},
  };
  return *kTable;
}

// A fresh folder under the temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            absl::StrCat("ds_harness_", info->test_suite_name(), "_",
                         info->name(), "_", ::getpid());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = (path_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::string path(const std::string& name = "") const {
    return name.empty() ? path_.string() : (path_ / name).string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace dynsparse::testing

#endif  // DYNSPARSE_TESTS_EXPERIMENTS_HARNESS_FAKES_H_
