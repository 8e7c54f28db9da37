// dynsparse report on a sweep run with fake metrics: the pivot (methods x
// swept parameters vs metrics) in Markdown, CSV and LaTeX, failures listed,
// SVG plots of metric vs sparsity and the Pareto plot.
#include "experiments/report/report.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "experiments/harness/runner.h"
#include "experiments/report/svg_plot.h"
#include "experiments/report/tables.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/experiments/harness_fakes.h"

namespace dynsparse {
namespace {

using testing::FakeMethods;
using ::testing::HasSubstr;
using testing::TempDir;
using testing::ToyMethod;
namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The fake metric again under the name "latency", so the report finds a
// cost axis for the Pareto plot.
const std::vector<MetricInfo>& Metrics() {
  static const auto* const kTable = [] {
    auto* table = new std::vector<MetricInfo>(testing::FakeMetrics());
    MetricInfo latency = table->front();
    latency.name = "latency";
    table->push_back(latency);
    return table;
  }();
  return *kTable;
}

// Runs dense + toy keep in {0.5, 0.25, 0.1}; keep 0.1 fails the accuracy.
std::string RunSweep(const TempDir& dir, std::vector<std::string> sets = {},
                     const std::string& out = "out") {
  const std::string yaml =
      "name: rep\n"
      "model: {path: tests/fixtures/models/tiny-llama-chat, label: tiny}\n"
      "methods:\n"
      "  - {name: dense}\n"
      "  - {name: toy, keep: [0.5, 0.25, 0.1], mode: a_b}\n"
      "metrics:\n"
      "  - {name: fake, task: a, fail_keep: 0.1}\n"
      "  - {name: latency, task: b}\n";
  auto config = LoadExperimentConfig(dir.Write("rep.yaml", yaml), sets,
                                     {FakeMethods(), Metrics()});
  EXPECT_TRUE(config.ok()) << config.status();
  RunOptions options;
  options.out_dir = dir.path(out);
  auto opener = [](const Job& job) -> absl::StatusOr<OpenedJob> {
    auto method =
        std::make_shared<ToyMethod>(job.method.params.value("keep", 1.0));
    OpenedJob opened;
    opened.model.method = method.get();
    opened.owner = method;
    return opened;
  };
  EXPECT_TRUE(RunExperiment(*config, Metrics(), opener, options).ok());
  return options.out_dir;
}

TEST(ReportTest, TablesPivotMethodsAndParametersAgainstMetrics) {
  TempDir dir;
  const std::string out = RunSweep(dir);
  auto summary = WriteReport({out}, out, ReportOptions{});
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->errors, 1u);

  const std::string md = ReadAll(out + "/report.md");
  EXPECT_THAT(md, HasSubstr("- **value a** ↑: fake protocol of task a\n"));
  EXPECT_THAT(md, HasSubstr("| model | method | keep | mode | value a ↑ | "
                            "value b ↑ |\n"));
  EXPECT_THAT(md, HasSubstr("| tiny | dense |  |  | 10.00 ± 0.5000 | "
                            "10.00 ± 0.5000 |\n"));
  EXPECT_THAT(md, HasSubstr("| tiny | toy | 0.25 | a_b | 2.500 ± 0.5000 | "
                            "2.500 ± 0.5000 |\n"));
  EXPECT_THAT(md, HasSubstr("| tiny | toy | 0.1 | a_b | error | 1.000 ± "
                            "0.5000 |\n"));
  EXPECT_THAT(md, HasSubstr("## Failed (1)\n\n- tiny toy keep=0.1 mode=a_b / "
                            "fake: keep 0.1 is impossible\n"));

  const std::string csv = ReadAll(out + "/report.csv");
  EXPECT_THAT(csv, HasSubstr("model,method,keep,mode,device,dtype,value a,"
                             "value a stderr,value a n,value b,value b "
                             "stderr,value b n\n"));
  EXPECT_THAT(csv, HasSubstr("tiny,toy,0.5,a_b,cpu,f32,5,0.5,7,5,0.5,7\n"));

  const std::string tex = ReadAll(out + "/report.tex");
  EXPECT_THAT(tex, HasSubstr("\\begin{tabular}{llllrr}"));
  EXPECT_THAT(tex, HasSubstr("tiny & toy & 0.5 & a\\_b & 5.000 $\\pm$ 0.5000 "
                             "& 5.000 $\\pm$ 0.5000 \\\\\n"));
}

TEST(ReportTest, PlotsMetricVsSparsityAndPareto) {
  TempDir dir;
  const std::string out = RunSweep(dir);
  auto summary = WriteReport({out}, out, ReportOptions{});
  ASSERT_TRUE(summary.ok()) << summary.status();
  const std::string plot = out + "/plot-value-a-vs-keep.svg";
  ASSERT_TRUE(fs::exists(plot));
  const std::string svg = ReadAll(plot);
  EXPECT_THAT(svg, ::testing::StartsWith("<svg xmlns="));
  EXPECT_THAT(svg, ::testing::EndsWith("</svg>\n"));
  EXPECT_THAT(svg, HasSubstr(">toy mode=a_b</text>"));  // The swept line.
  EXPECT_THAT(svg, HasSubstr("stroke-dasharray"));      // Dense reference.
  // Latency is the cost axis, not a sparsity plot of its own.
  EXPECT_FALSE(fs::exists(out + "/plot-value-b-vs-keep.svg"));
  const std::string pareto = out + "/plot-pareto-value-a-vs-value-b.svg";
  ASSERT_TRUE(fs::exists(pareto));
  EXPECT_THAT(ReadAll(pareto), HasSubstr(">Pareto frontier</text>"));
  // To look at the plots: DS_REPORT_TEST_KEEP=DIR keeps a copy.
  if (const char* keep = std::getenv("DS_REPORT_TEST_KEEP")) {
    fs::copy(
        out, keep,
        fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  }
}

// JSON has no NaN: a NaN result is written as null and must read back as
// "nan", not as an exception; mistyped fields read as absent.
TEST(ReportTest, NullValuesAndMistypedFieldsDoNotThrow) {
  TempDir dir;
  const std::string out = RunSweep(dir);
  const std::string file = out + "/results.jsonl";
  std::ifstream in(file);
  std::string line, text;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j["kind"] == "result" && j["job_index"] == 1) j["value"] = nullptr;
    if (j["kind"] == "result" && j["job_index"] == 2) j["n"] = "many";
    text += j.dump() + "\n";
  }
  in.close();
  std::ofstream(file, std::ios::trunc) << text;
  auto summary = WriteReport({out}, out, ReportOptions{});
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_THAT(ReadAll(out + "/report.md"),
              HasSubstr("| tiny | toy | 0.5 | a_b | nan ± 0.5000 |"));
  EXPECT_THAT(ReadAll(out + "/plot-value-a-vs-keep.svg"),
              ::testing::Not(HasSubstr("nan")));
}

TEST(ReportTest, SeveralConfigsGetAConfigColumn) {
  TempDir dir;
  const std::string a = RunSweep(dir);
  const std::string b = RunSweep(dir, {"name=rep2", "seed=1"}, "out2");
  auto summary = WriteReport({a, b}, dir.path("merged"), ReportOptions{});
  ASSERT_TRUE(summary.ok()) << summary.status();
  const std::string md = ReadAll(dir.path("merged/report.md"));
  EXPECT_THAT(md, HasSubstr("# Results: rep, rep2\n"));
  EXPECT_THAT(md, HasSubstr("| config | model | method | keep | mode |"));
  EXPECT_THAT(md, HasSubstr("| rep | tiny | dense |"));
  EXPECT_THAT(md, HasSubstr("| rep2 | tiny | dense |"));
}

TEST(ReportTest, NiceTicksAreRoundAndCoverTheRange) {
  const std::vector<double> ticks = NiceTicks(0.13, 0.97, 5);
  ASSERT_GE(ticks.size(), 2u);
  EXPECT_LE(ticks.front(), 0.13);
  EXPECT_GE(ticks.back(), 0.97 - 1e-12);
  const double step = ticks[1] - ticks[0];
  EXPECT_NEAR(step, 0.2, 1e-12);
  EXPECT_EQ(NiceTicks(5, 5, 5).size() >= 2, true);  // Flat data still plots.
}

TEST(ReportTest, TickLabelsShowTheStepsDecimals) {
  PlotSpec spec;
  PlotSeries s;
  s.points = {{0, 7508, ""}, {1, 7520, ""}};  // Steps of 2.5.
  spec.series.push_back(s);
  const std::string svg = RenderSvg(spec);
  EXPECT_THAT(svg, HasSubstr(">7512.5</text>"));
  EXPECT_THAT(svg, ::testing::Not(HasSubstr(">7518</text>")));
}

TEST(ReportTest, FormatValueKeepsFourSignificantDigits) {
  EXPECT_EQ(FormatValue(12.3456), "12.35");
  EXPECT_EQ(FormatValue(0.65123), "0.6512");
  EXPECT_EQ(FormatValue(1234.5), "1234");
  EXPECT_EQ(FormatValue(1.5e7), "1.500e+07");
}

}  // namespace
}  // namespace dynsparse
