// The experiment config: every bad-config class fails at load with the exact
// error (file, YAML path, valid names); include, --set and the hash.
#include "experiments/harness/config.h"
#include "experiments/harness/config_source.h"
#include "experiments/harness/yaml_json.h"
#include "experiments/metrics/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/experiments/harness_fakes.h"
#include "tests/test_paths.h"

namespace dynsparse {
namespace {

using testing::FakeMethods;
using testing::FakeMetrics;
using ::testing::HasSubstr;
using testing::TempDir;

constexpr char kModel[] = "tests/fixtures/models/tiny-llama-chat";

std::string Good() {
  return absl::StrCat(
      "name: exp\n"
      "model: {path: ",
      kModel,
      "}\n"
      "methods:\n"
      "  - {name: dense}\n"
      "  - {name: toy, keep: [0.5, 0.25], mode: a}\n"
      "metrics:\n"
      "  - {name: fake, task: a}\n");
}

absl::StatusOr<LoadedConfig> Load(const TempDir& dir, const std::string& yaml,
                                  std::vector<std::string> sets = {}) {
  const std::string path = dir.Write("exp.yaml", yaml);
  return LoadExperimentConfig(path, sets, {FakeMethods(), FakeMetrics()});
}

// The error text without the "FILE: " prefix (checked once below).
std::string Error(const TempDir& dir, const std::string& yaml,
                  std::vector<std::string> sets = {}) {
  auto loaded = Load(dir, yaml, sets);
  if (loaded.ok()) return "loaded fine";
  const std::string message(loaded.status().message());
  const std::string prefix = dir.path("exp.yaml") + ": ";
  return message.starts_with(prefix) ? message.substr(prefix.size()) : message;
}

std::string Replace(std::string text, const std::string& from,
                    const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(HarnessConfigTest, GoodConfigLoads) {
  TempDir dir;
  auto loaded = Load(dir, Good());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const ExperimentConfig& c = loaded->config;
  EXPECT_EQ(c.name, "exp");
  ASSERT_EQ(c.models.size(), 1u);
  EXPECT_EQ(c.models[0].label, "tiny-llama-chat");
  EXPECT_EQ(c.models[0].dtype, "f32");
  ASSERT_EQ(c.methods.size(), 2u);
  EXPECT_EQ(c.methods[1].variants.size(), 2u);
  ASSERT_EQ(c.metrics.size(), 1u);
  EXPECT_EQ(c.metrics[0].path, "metrics[0]");
  EXPECT_EQ(c.metrics[0].params, nlohmann::json({{"task", "a"}}));
  EXPECT_EQ(loaded->hash.size(), 16u);
}

TEST(HarnessConfigTest, ErrorsNameTheFile) {
  TempDir dir;
  auto loaded = Load(dir, Replace(Good(), "name: exp", "name: exp\nmodle: 1"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(),
            dir.path("exp.yaml") +
                ": modle: unknown key 'modle' (valid: description, include, "
                "methods, metrics, model, name, output, report, seed)");
}

TEST(HarnessConfigTest, TopLevelErrors) {
  TempDir dir;
  EXPECT_EQ(Error(dir, Replace(Good(), "name: exp\n", "")),
            "name: required key is missing");
  EXPECT_EQ(Error(dir, Replace(Good(), "name: exp", "name: my exp")),
            "name: 'my exp' must be non-empty, without spaces or slashes (it "
            "names the results folder)");
  EXPECT_EQ(Error(dir, Good() + "seed: abc\n"),
            "seed: expected an integer, got the string 'abc'");
  EXPECT_EQ(Error(dir, Good() + "seed: -1\n"), "seed: must be >= 0, got -1");
}

TEST(HarnessConfigTest, YamlLevelErrors) {
  TempDir dir;
  const std::string file = dir.path("exp.yaml");
  auto dup = Load(dir, Good() + "name: again\n");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().message(), file + ":8:1: name: duplicate key 'name'");
  auto syntax = Load(dir, "name: [unclosed\n");
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.status().message(),
            file + ":2:1: YAML syntax error: end of sequence flow not found");
  auto top = Load(dir, "- a\n- b\n");
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.status().message(),
            file + ": the top level must be a mapping, got a list");
}

TEST(HarnessConfigTest, AliasBombsAndDeepNestingAreErrors) {
  std::string bomb;
  // Aliases: h refers to g ten times, g to f ten times, ... (10^8 values).
  bomb += "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c) {
    const std::string prev(1, c - 1);
    absl::StrAppend(&bomb, std::string(1, c), ": &", std::string(1, c), " [");
    for (int i = 0; i < 10; ++i)
      absl::StrAppend(&bomb, i ? ", " : "", "*", prev);
    bomb += "]\n";
  }
  auto tree = ParseYaml(bomb, "bomb.yaml");
  ASSERT_FALSE(tree.ok());
  EXPECT_THAT(std::string(tree.status().message()),
              HasSubstr("more than 100000 values (aliases expanding?)"));
  auto deep =
      ParseYaml(std::string(100, '[') + std::string(100, ']'), "deep.yaml");
  ASSERT_FALSE(deep.ok());
  EXPECT_THAT(std::string(deep.status().message()),
              HasSubstr("nesting deeper than 64 levels"));
}

TEST(HarnessConfigTest, ModelErrors) {
  TempDir dir;
  const std::string model = absl::StrCat("model: {path: ", kModel, "}");
  EXPECT_EQ(Error(dir, Replace(Good(), model, "model: {dtype: f32}")),
            "model.path: required key is missing");
  EXPECT_EQ(Error(dir, Replace(Good(), model,
                               absl::StrCat("model: {path: ", kModel,
                                            ", dtyp: f16}"))),
            "model.dtyp: unknown key 'dtyp' (valid: device, dtype, label, "
            "path, threads, tokenizer)");
  EXPECT_EQ(Error(dir, Replace(Good(), model,
                               absl::StrCat("model: {path: ", kModel,
                                            ", dtype: f64}"))),
            "model.dtype: unknown value 'f64' (valid: bf16, f16, f32)");
  EXPECT_EQ(Error(dir, Replace(Good(), model,
                               absl::StrCat("model: {path: ", kModel,
                                            ", device: tpu}"))),
            "model.device: unknown value 'tpu' (valid: cpu, cuda)");
  EXPECT_EQ(Error(dir, Replace(Good(), model,
                               absl::StrCat("model: {path: ", kModel,
                                            ", threads: two}"))),
            "model.threads: expected an integer, got the string 'two'");
  EXPECT_EQ(Error(dir, Replace(Good(), model, "model: {path: no/such/model}")),
            "model.path: no such file or folder 'no/such/model'");
  EXPECT_EQ(Error(dir, Replace(Good(), model, "model: [1]")),
            "model[0]: expected a mapping, got the integer 1");
  EXPECT_EQ(Error(dir, Replace(Good(), model, "model: []")),
            "model: the list of models is empty");
  EXPECT_EQ(
      Error(dir, Replace(Good(), model,
                         absl::StrCat("model: [{path: ", kModel,
                                      "}, {path: ", kModel, "}]"))),
      "model[1]: label 'tiny-llama-chat' is used by model[0] too; give one of "
      "them its own `label:`");
  // random:NAME models have no files to check.
  EXPECT_EQ(
      Error(dir, Replace(Good(), model, "model: {path: random:opt-125m}")),
      "loaded fine");
}

TEST(HarnessConfigTest, MethodErrors) {
  TempDir dir;
  const std::string toy = "{name: toy, keep: [0.5, 0.25], mode: a}";
  EXPECT_EQ(Error(dir, Replace(Good(), toy, "{name: dejavoo}")),
            "methods[1].name: unknown method 'dejavoo' (valid: dense, toy)");
  EXPECT_EQ(Error(dir, Replace(Good(), toy, "{keep: 0.5}")),
            "methods[1].name: required key is missing");
  EXPECT_EQ(Error(dir, Replace(Good(), toy, "{name: toy, kep: 0.5}")),
            "methods[1].kep: unknown parameter 'kep' of method 'toy' (valid: "
            "keep, mode)");
  EXPECT_EQ(Error(dir, Replace(Good(), "{name: dense}", "{name: dense, k: 1}")),
            "methods[0].k: unknown parameter 'k' of method 'dense' (it takes "
            "none)");
  EXPECT_EQ(Error(dir, Replace(Good(), toy, "{name: toy, keep: {a: 1}}")),
            "methods[1].keep: expected a number, string or boolean, got a "
            "mapping");
  EXPECT_EQ(Error(dir, Replace(Good(), toy, "{name: toy, keep: [0.5, [1]]}")),
            "methods[1].keep[1]: expected a number, string or boolean, got a "
            "list");
  EXPECT_EQ(Error(dir, Replace(Good(), toy, "{name: toy, keep: []}")),
            "methods[1].keep: an empty list sweeps nothing");
  EXPECT_EQ(Error(dir, Replace(Good(), toy, "{name: toy, keep: [0.5, 2]}")),
            "methods[1]: toy keep=2: keep must be in (0, 1], got 2");
  EXPECT_EQ(Error(dir, Replace(Good(), toy, "{name: toy, keep: x}")),
            "methods[1]: toy keep=x: method parameter 'keep': 'x' is not a "
            "number");
  EXPECT_EQ(Error(dir, Replace(Good(), "methods:\n", "methods: 3\nx:\n")),
            "x: unknown key 'x' (valid: description, include, methods, "
            "metrics, model, name, output, report, seed)");
  EXPECT_EQ(Error(dir, Replace(Good(), toy,
                               "{name: toy, keep: 0.5}\n  - " +
                                   std::string("{name: toy, keep: "
                                               "[0.25, 0.5]}"))),
            "methods[2]: job 'toy keep=0.5' appears twice (also from "
            "methods[1])");
}

TEST(HarnessConfigTest, ZipErrors) {
  TempDir dir;
  const std::string toy = "{name: toy, keep: [0.5, 0.25], mode: a}";
  auto with = [&](const std::string& entry) {
    return Error(dir, Replace(Good(), toy, entry));
  };
  EXPECT_EQ(with("{name: toy, keep: [0.5, 0.25], mode: [a, b, a], zip: [keep, "
                 "mode]}"),
            "methods[1].zip[0][1]: 'mode' has 3 values but 'keep' has 2; "
            "zipped lists must have equal lengths");
  EXPECT_EQ(with("{name: toy, keep: [0.5, 0.25], mode: a, zip: [keep, mode]}"),
            "methods[1].zip[0][1]: 'mode' is not a list (zip moves lists)");
  EXPECT_EQ(with("{name: toy, keep: [0.5, 0.25], zip: [keep, speed]}"),
            "methods[1].zip[0][1]: 'speed' is not a parameter of this method");
  EXPECT_EQ(
      with("{name: toy, keep: [0.5, 0.25], zip: [keep]}"),
      "methods[1].zip[0]: a zip group lists at least two parameter names");
  EXPECT_EQ(with("{name: toy, keep: [0.5, 0.25], zip: 3}"),
            "methods[1].zip: expected a list of parameter names, got the "
            "integer 3");
}

TEST(HarnessConfigTest, MetricErrors) {
  TempDir dir;
  const std::string fake = "{name: fake, task: a}";
  auto with = [&](const std::string& entry) {
    return Error(dir, Replace(Good(), fake, entry));
  };
  EXPECT_EQ(with("{name: fak}"),
            "metrics[0].name: unknown metric 'fak' (valid: fake)");
  EXPECT_EQ(with("{name: fake, tsk: a}"),
            "metrics[0].tsk: unknown parameter 'tsk' of metric 'fake' (valid: "
            "fail_keep, rows, sleep_ms, task)");
  EXPECT_EQ(with("{name: fake, task: c}"),
            "metrics[0].task: unknown task 'c' (valid: a, b)");
  EXPECT_EQ(with("{name: fake, rows: many}"),
            "metrics[0].rows: expected an integer, got 'many'");
  EXPECT_EQ(Error(dir, Replace(Good(), "  - " + fake + "\n", "  []\n")),
            "metrics: must list at least one entry");
  EXPECT_EQ(Error(dir, Replace(Good(), "metrics:\n  - " + fake + "\n", "")),
            "metrics: required key is missing");
}

TEST(HarnessConfigTest, ReportErrors) {
  TempDir dir;
  EXPECT_EQ(Error(dir, Good() + "report: {tables: [md, html]}\n"),
            "report.tables[1]: unknown table format 'html' (valid: csv, md, "
            "tex)");
  EXPECT_EQ(Error(dir, Good() + "report: {plots: [histogram]}\n"),
            "report.plots[0]: unknown plot 'histogram' (valid: pareto, "
            "metric-vs-sparsity, METRIC-vs-sparsity)");
  EXPECT_EQ(Error(dir, Good() + "report: {table: [md]}\n"),
            "report.table: unknown key 'table' (valid: pareto, plots, tables)");
  EXPECT_EQ(Error(dir, Good() + "report: {pareto: {quality: 1}}\n"),
            "report.pareto.quality: expected a string, got the integer 1");
}

// The real registries: task and corpus names are checked by the metric.
TEST(HarnessConfigTest, RealRegistriesCheckCorpusNames) {
  TempDir dir;
  const std::string path = dir.Write(
      "exp.yaml", absl::StrCat("name: exp\nmodel: {path: ", kModel,
                               "}\nmetrics:\n  - {name: perplexity, corpus: "
                               "no-such-corpus}\n"));
  auto loaded =
      LoadExperimentConfig(path, {}, {MethodRegistry(), MetricRegistry()});
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(std::string(loaded.status().message()),
              ::testing::StartsWith(path + ": metrics[0].corpus: "));
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("wikitext2"));
}

TEST(HarnessConfigTest, IncludeMergesMappingsAndReplacesLists) {
  TempDir dir;
  dir.Write("base.yaml", absl::StrCat("model: {path: ", kModel,
                                      ", dtype: f16, threads: 2}\n"
                                      "metrics:\n  - {name: fake, task: b}\n"
                                      "seed: 7\nreport: {tables: [md]}\n"));
  auto loaded = Load(dir,
                     "include: base.yaml\nname: child\nmodel: {dtype: bf16}\n"
                     "metrics:\n  - {name: fake, task: a}\nreport: null\n");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->config.models[0].dtype, "bf16");  // Mapping: merged.
  EXPECT_EQ(loaded->config.models[0].threads, 2);
  EXPECT_EQ(loaded->config.seed, 7);
  EXPECT_EQ(loaded->config.metrics.size(), 1u);  // List: replaced.
  EXPECT_EQ(loaded->config.metrics[0].params["task"], "a");
  EXPECT_FALSE(loaded->resolved.contains("report"));  // null deletes.
  EXPECT_FALSE(loaded->resolved.contains("include"));
}

TEST(HarnessConfigTest, IncludeCycleIsAnError) {
  TempDir dir;
  dir.Write("a.yaml", "include: b.yaml\nname: a\n");
  dir.Write("b.yaml", "include: [a.yaml]\n");
  auto tree = ReadConfigTree(dir.path("a.yaml"));
  ASSERT_FALSE(tree.ok());
  EXPECT_EQ(tree.status().message(),
            absl::StrCat(dir.path("a.yaml"),
                         ": include cycle: ", dir.path("a.yaml"), " includes ",
                         dir.path("b.yaml"), " includes ", dir.path("a.yaml")));
}

TEST(HarnessConfigTest, IncludeErrors) {
  TempDir dir;
  auto missing = ReadConfigTree(dir.Write("a.yaml", "include: nope.yaml\n"));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr(dir.path("nope.yaml")));
  auto bad = ReadConfigTree(dir.Write("b.yaml", "include: {x: 1}\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            dir.path("b.yaml") +
                ": include: expected a file name or a list of them, got a "
                "mapping");
}

TEST(HarnessConfigTest, SetOverridesAreYamlTyped) {
  TempDir dir;
  auto loaded =
      Load(dir, Good(),
           {"methods[1].keep=[0.75, 0.5, 0.25]", "seed=3", "model.label=tiny",
            "metrics[0].task='b'", "report.tables=md"});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->config.methods[1].variants.size(), 3u);
  EXPECT_EQ(loaded->config.seed, 3);
  EXPECT_EQ(loaded->config.models[0].label, "tiny");
  EXPECT_EQ(loaded->config.metrics[0].params["task"], "b");
  EXPECT_EQ(loaded->config.report.tables, std::vector<std::string>{"md"});
}

TEST(HarnessConfigTest, SetOverrideErrors) {
  TempDir dir;
  EXPECT_EQ(Error(dir, Good(), {"methods[5].keep=1"}),
            "--set methods[5].keep=1: methods has 2 entries");
  EXPECT_EQ(Error(dir, Good(), {"seed"}),
            "--set seed: expected key.path=value");
  EXPECT_EQ(Error(dir, Good(), {"name.x=1"}),
            "--set name.x=1: name is not a mapping (it is the string 'exp')");
  EXPECT_EQ(Error(dir, Good(), {"model[0]=1"}),
            "--set model[0]=1: model is not a list");
  EXPECT_EQ(Error(dir, Good(), {"methods[x]=1"}),
            "--set methods[x]=1: 'x' is not a list index");
  // An override is validated like the file.
  EXPECT_EQ(Error(dir, Good(), {"methods[1].keep=3"}),
            "methods[1]: toy keep=3 mode=a: keep must be in (0, 1], got 3");
}

TEST(HarnessConfigTest, SetPathSyntaxErrors) {
  TempDir dir;
  EXPECT_EQ(Error(dir, Good(), {"methods[=1"}),
            "--set methods[=1: unclosed or empty [index]");
  EXPECT_EQ(Error(dir, Good(), {"methods[].keep=1"}),
            "--set methods[].keep=1: unclosed or empty [index]");
  EXPECT_EQ(Error(dir, Good(), {".seed=1"}),
            "--set .seed=1: empty key in the path");
  EXPECT_EQ(Error(dir, Good(), {"model..label=x"}),
            "--set model..label=x: empty key in the path");
  EXPECT_EQ(Error(dir, Good(), {"seed.=1"}),
            "--set seed.=1: path ends with '.'");
  EXPECT_EQ(Error(dir, Good(), {"=1"}), "--set =1: empty key path");
  // A value that is not YAML names the override, not the file.
  EXPECT_THAT(Error(dir, Good(), {"seed=[1"}), HasSubstr("--set seed=[1"));
  EXPECT_THAT(Error(dir, Good(), {"seed=[1"}), HasSubstr("YAML syntax error"));
}

TEST(HarnessConfigTest, ListShapeAndModelFieldErrors) {
  TempDir dir;
  const std::string methods =
      "methods:\n  - {name: dense}\n  - {name: toy, keep: [0.5, 0.25], "
      "mode: a}\n";
  EXPECT_EQ(Error(dir, Replace(Good(), methods, "methods: 3\n")),
            "methods: expected a non-empty list, got the integer 3");
  EXPECT_EQ(Error(dir, Replace(Good(), "metrics:\n  - {name: fake, task: a}\n",
                               "metrics: {name: fake}\n")),
            "metrics: expected a non-empty list, got a mapping");
  const std::string model = absl::StrCat("{path: ", kModel, "}");
  EXPECT_EQ(Error(dir, Replace(Good(), model, "{path: ''}")),
            "model.path: must not be empty");
  EXPECT_EQ(Error(dir, Replace(Good(), model,
                               absl::StrCat("{path: ", kModel,
                                            ", tokenizer: no/such.json}"))),
            "model.tokenizer: no such file or folder 'no/such.json'");
  // A parameter in two zip groups.
  EXPECT_EQ(
      Error(dir, Replace(Good(), "{name: toy, keep: [0.5, 0.25], mode: a}",
                         "{name: toy, keep: [0.5, 0.25], mode: [a, b], "
                         "zip: [[keep, mode], [mode, keep]]}")),
      "methods[1].zip[1][0]: 'mode' is zipped twice");
  EXPECT_EQ(
      Error(dir, Replace(Good(), "{name: toy, keep: [0.5, 0.25], mode: a}",
                         "{name: toy, keep: [0.5, 0.25], zip: [[keep, 3]]}")),
      "methods[1].zip[0][1]: expected a parameter name, got the integer 3");
}

TEST(HarnessConfigTest, IncludeEntriesOversizedAndNonUtf8FilesAreErrors) {
  TempDir dir;
  auto number = ReadConfigTree(dir.Write("a.yaml", "include: [3]\n"));
  ASSERT_FALSE(number.ok());
  EXPECT_EQ(number.status().message(),
            dir.path("a.yaml") +
                ": include[0]: expected a file name, got the integer 3");
  // Configs are read whole, up to 4 MiB: a larger file is an error that
  // names it.
  std::string big = "description: \"";
  big.append((4 << 20) + 16, 'x');
  big += "\"\n";
  auto huge = ReadConfigTree(dir.Write("huge.yaml", big));
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(std::string(huge.status().message()),
              HasSubstr(dir.path("huge.yaml")));
  // Not UTF-8: the byte is named.
  auto latin1 = ReadConfigTree(dir.Write("latin1.yaml", "name: caf\xe9\n"));
  ASSERT_FALSE(latin1.ok());
  EXPECT_EQ(latin1.status().message(),
            dir.path("latin1.yaml") + ": invalid UTF-8 at byte 9");
}

TEST(HarnessConfigTest, HashCoversWhatDecidesTheNumbers) {
  TempDir dir;
  auto a = Load(dir, Good());
  auto renamed = Load(dir, Good(), {"name=other", "report.tables=[md]"});
  auto changed = Load(dir, Good(), {"metrics[0].task=b"});
  ASSERT_TRUE(a.ok() && renamed.ok() && changed.ok());
  EXPECT_EQ(a->hash, renamed->hash);
  EXPECT_NE(a->hash, changed->hash);
}

TEST(HarnessConfigTest, ResolvedYamlReadsBackTheSame) {
  TempDir dir;
  auto loaded = Load(dir, Good() +
                              "description: \"true\"\n"
                              "output: \"0.5\"\n");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  nlohmann::json tree = loaded->resolved;
  tree["extra"] = {{"f", 1.0}, {"s", "a: b"}, {"n", nullptr}, {"e", ""}};
  auto back = ParseYaml(ToYaml(tree), "resolved.yaml");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, tree) << ToYaml(tree);
}

// Every shipped config validates against the real registries (on the tiny
// fixture model: the reference models may not be built where tests run).
TEST(HarnessConfigTest, ShippedConfigsLoad) {
  int configs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           ::dynsparse::testing::SourcePath("configs"))) {
    if (entry.path().extension() != ".yaml") continue;
    ++configs;
    auto loaded = LoadExperimentConfig(
        entry.path().string(), {absl::StrCat("model=[{path: ", kModel, "}]")},
        {MethodRegistry(), MetricRegistry()});
    EXPECT_TRUE(loaded.ok()) << loaded.status();
  }
  EXPECT_GE(configs, 4);
}

}  // namespace
}  // namespace dynsparse
