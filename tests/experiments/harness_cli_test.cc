// `dynsparse run` and `dynsparse report` as a user runs them: the real binary
// on the tiny fixture model. A sweep killed with SIGKILL mid-run and started
// again ends with every (job, metric) result exactly once; Ctrl-C stops after
// the job in flight; an impossible job is recorded and the others finish.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/experiments/harness_fakes.h"

namespace dynsparse {
namespace {

using nlohmann::json;
using testing::TempDir;
namespace fs = std::filesystem;

constexpr char kModel[] = "tests/fixtures/models/tiny-llama-chat";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts `dynsparse ARGS...` with stdout/stderr in files under `dir`.
pid_t Spawn(const std::vector<std::string>& args, const TempDir& dir) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int out =
        open(dir.path("stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err =
        open(dir.path("stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    std::vector<char*> argv;
    std::string binary = DYNSPARSE_CLI_PATH;
    argv.push_back(binary.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

int Wait(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

int RunCli(const std::vector<std::string>& args, const TempDir& dir) {
  return Wait(Spawn(args, dir));
}

std::vector<json> ResultLines(const std::string& file) {
  std::vector<json> out;
  std::istringstream in(ReadAll(file));
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

int CountOk(const std::string& file) {
  int n = 0;
  for (const json& l : ResultLines(file)) {
    n += l.value("kind", "") == "result" && l.value("status", "") == "ok";
  }
  return n;
}

// Waits until the run has written `rows` ok results (or exited).
void WaitForRows(pid_t pid, const std::string& file, int rows) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(file) && CountOk(file) >= rows) return;
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      ADD_FAILURE() << "the run exited before writing " << rows << " rows";
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ADD_FAILURE() << "timed out waiting for " << rows << " rows";
}

// Jobs: the tiny model under `models` labels; one perplexity metric over
// the README (slow enough that a kill lands mid-sweep).
std::string SweepConfig(const TempDir& dir, int models,
                        const std::string& extra_model = "") {
  std::string yaml = "name: killtest\nmodel:\n";
  for (int i = 0; i < models; ++i) {
    absl::StrAppend(&yaml, "  - {path: ", kModel, ", label: m", i,
                    ", threads: 1}\n");
  }
  yaml += extra_model;
  absl::StrAppend(&yaml,
                  "metrics:\n"
                  "  - {name: perplexity, corpus: README.md, context: 128, "
                  "stride: 64, max_tokens: 768}\n"
                  "report: {tables: [md, csv], plots: [metric-vs-sparsity]}\n");
  return dir.Write("sweep.yaml", yaml);
}

void ExpectEveryJobOnce(const std::string& file, int jobs) {
  std::map<std::string, int> ok;
  for (const json& l : ResultLines(file)) {
    if (l.value("kind", "") == "result" && l.value("status", "") == "ok") {
      ++ok[l["job"].get<std::string>()];
    }
  }
  EXPECT_EQ(ok.size(), static_cast<size_t>(jobs));
  for (const auto& [job, n] : ok) EXPECT_EQ(n, 1) << job;
}

TEST(HarnessCliTest, ASweepKilledWithSigkillFinishesEveryJobOnce) {
  TempDir dir;
  const std::string config = SweepConfig(dir, 6);
  const std::string out = dir.path("out");
  const std::string results = out + "/results.jsonl";
  const pid_t pid = Spawn({"run", config, "--out", out}, dir);
  WaitForRows(pid, results, 2);
  kill(pid, SIGKILL);
  EXPECT_EQ(Wait(pid), 128 + SIGKILL);
  const int before = CountOk(results);
  EXPECT_LT(before, 6) << "the run finished before the kill";

  ASSERT_EQ(RunCli({"run", config, "--out", out}, dir), 0)
      << ReadAll(dir.path("stderr"));
  ExpectEveryJobOnce(results, 6);
  int interrupted = 0;
  for (const json& l : ResultLines(results)) {
    interrupted += l.value("kind", "") == "interrupted";
  }
  EXPECT_LE(interrupted, 1);  // 0 when the kill fell between two jobs.
  EXPECT_THAT(ReadAll(dir.path("stderr")),
              ::testing::HasSubstr(absl::StrCat(before, " already done")));
  EXPECT_TRUE(fs::exists(out + "/report.md"));
  EXPECT_TRUE(fs::exists(out + "/resolved.yaml"));
}

TEST(HarnessCliTest, CtrlCStopsAfterTheJobInFlight) {
  TempDir dir;
  const std::string config = SweepConfig(dir, 4);
  const std::string out = dir.path("out");
  const std::string results = out + "/results.jsonl";
  const pid_t pid = Spawn({"run", config, "--out", out}, dir);
  WaitForRows(pid, results, 1);
  kill(pid, SIGINT);
  EXPECT_EQ(Wait(pid), 130) << ReadAll(dir.path("stderr"));
  EXPECT_THAT(ReadAll(dir.path("stderr")),
              ::testing::HasSubstr("stopped by Ctrl-C"));
  // No job was cut short, so nothing is recorded as interrupted.
  ASSERT_EQ(RunCli({"run", config, "--out", out}, dir), 0);
  ExpectEveryJobOnce(results, 4);
  for (const json& l : ResultLines(results)) {
    EXPECT_NE(l.value("kind", ""), "interrupted");
  }
}

TEST(HarnessCliTest, AnImpossibleJobIsReportedAndTheOthersFinish) {
  TempDir dir;
  // A model folder without a tokenizer cannot run a perplexity.
  const std::string config = SweepConfig(
      dir, 2, "  - {path: tests/fixtures/models/opt-prenorm, threads: 1}\n");
  const std::string out = dir.path("out");
  EXPECT_EQ(RunCli({"run", config, "--out", out}, dir), 3);
  ExpectEveryJobOnce(out + "/results.jsonl", 2);
  const std::string report = ReadAll(out + "/report.md");
  EXPECT_THAT(report, ::testing::HasSubstr("## Failed (1)"));
  EXPECT_THAT(report, ::testing::HasSubstr(
                          "- opt-prenorm dense / perplexity: opening the "
                          "model: tests/fixtures/models/opt-prenorm: has "
                          "neither tokenizer.json nor vocab.json + "
                          "merges.txt"));
  EXPECT_THAT(report, ::testing::HasSubstr("| opt-prenorm | dense | error |"));
}

TEST(HarnessCliTest, DryRunListsTheJobsOfTheShard) {
  TempDir dir;
  const std::string config = SweepConfig(dir, 3);
  ASSERT_EQ(RunCli({"run", config, "--dry-run", "--shard", "1/2", "--out",
                    dir.path("out")},
                   dir),
            0);
  const std::string out = ReadAll(dir.path("stdout"));
  EXPECT_THAT(out, ::testing::HasSubstr("1 of 3 job(s)"));
  EXPECT_THAT(out, ::testing::HasSubstr("   1  todo      m1  cpu/f32  dense"));
  EXPECT_THAT(out, ::testing::Not(::testing::HasSubstr("m0")));
  EXPECT_FALSE(fs::exists(dir.path("out")));  // A dry run writes nothing.
}

TEST(HarnessCliTest, BadConfigAndFlagsFailWithOneLine) {
  TempDir dir;
  const std::string config =
      dir.Write("bad.yaml", "name: x\nmodel: {path: nowhere}\nmetrics: []\n");
  EXPECT_EQ(RunCli({"run", config}, dir), 1);
  EXPECT_EQ(ReadAll(dir.path("stderr")),
            "dynsparse run: error: " + config +
                ": model.path: no such file or folder 'nowhere'\n");
  EXPECT_EQ(RunCli({"run", config, "--shard", "2/2"}, dir), 1);
  EXPECT_THAT(ReadAll(dir.path("stderr")),
              ::testing::HasSubstr("--shard '2/2': expected I/N"));
  EXPECT_EQ(RunCli({"report", dir.path("nothing-here")}, dir), 1);
  EXPECT_THAT(ReadAll(dir.path("stderr")),
              ::testing::HasSubstr("no results*.jsonl files"));
}

TEST(HarnessCliTest, ReportMergesShards) {
  TempDir dir;
  const std::string config = SweepConfig(dir, 3);
  const std::string out = dir.path("out");
  for (const char* shard : {"0/2", "1/2"}) {
    ASSERT_EQ(
        RunCli({"run", config, "--out", out, "--shard", shard, "--no-report"},
               dir),
        0);
  }
  ASSERT_EQ(RunCli({"report", out, "--tables", "md,csv,tex", "--out",
                    dir.path("merged")},
                   dir),
            0)
      << ReadAll(dir.path("stderr"));
  const std::string csv = ReadAll(dir.path("merged/report.csv"));
  EXPECT_THAT(csv, ::testing::StartsWith(
                       "model,method,device,dtype,perplexity README.md,"
                       "perplexity README.md stderr,perplexity README.md n\n"));
  for (const char* model : {"\nm0,dense,", "\nm1,dense,", "\nm2,dense,"}) {
    EXPECT_THAT(csv, ::testing::HasSubstr(model));
  }
  EXPECT_TRUE(fs::exists(dir.path("merged/report.tex")));
  EXPECT_TRUE(fs::exists(dir.path("merged/plot-perplexity-README.md.svg")));
  EXPECT_EQ(RunCli({"report", out, "--tables", "html"}, dir), 1);
  EXPECT_EQ(ReadAll(dir.path("stderr")),
            "dynsparse report: error: report.tables[0]: unknown table format "
            "'html' (valid: csv, md, tex)\n");
}

}  // namespace
}  // namespace dynsparse
