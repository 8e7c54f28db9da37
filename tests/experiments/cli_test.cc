// The dynsparse binary, end to end: good runs print the documented JSON on
// stdout; every class of bad input exits non-zero with ONE error line on
// stderr that names the file and the field or tensor at fault.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/test_paths.h"

namespace dynsparse {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

RunResult RunCli(const std::string& args) {
  // ctest runs tests in parallel processes: one pair of files per process.
  const fs::path dir = fs::temp_directory_path();
  const std::string stem = absl::StrCat("dynsparse_cli_test_", getpid());
  const fs::path out = dir / (stem + ".out");
  const fs::path err = dir / (stem + ".err");
  const std::string command = absl::StrCat(DYNSPARSE_CLI_PATH, " ", args, " >",
                                           out.string(), " 2>", err.string());
  const int status = std::system(command.c_str());
  RunResult result;
  result.exit_code = WEXITSTATUS(status);
  result.out = ReadFile(out);
  result.err = ReadFile(err);
  fs::remove(out);
  fs::remove(err);
  return result;
}

// A private copy of a fixture model whose files a test may corrupt.
class ModelCopy {
 public:
  explicit ModelCopy(const std::string& fixture) {
    dir_ = fs::temp_directory_path() /
           absl::StrCat(
               "dynsparse_cli_", fixture, "_",
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::copy(testing::FixturePath("models/" + fixture), dir_,
             fs::copy_options::recursive);
  }
  ~ModelCopy() { fs::remove_all(dir_); }
  std::string path() const { return dir_.string(); }
  fs::path file(const std::string& name) const { return dir_ / name; }

  // Rewrites model.safetensors after `edit` changes its JSON header.
  void EditHeader(const std::function<void(nlohmann::json&)>& edit) {
    const std::string bytes = ReadFile(file("model.safetensors"));
    uint64_t header_len = 0;
    std::memcpy(&header_len, bytes.data(), 8);
    nlohmann::json header = nlohmann::json::parse(bytes.substr(8, header_len));
    edit(header);
    const std::string new_header = header.dump();
    const uint64_t new_len = new_header.size();
    std::ofstream out(file("model.safetensors"),
                      std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&new_len), 8);
    out << new_header << bytes.substr(8 + header_len);
  }
  void EditConfig(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json config =
        nlohmann::json::parse(ReadFile(file("config.json")));
    edit(config);
    std::ofstream(file("config.json"), std::ios::trunc) << config.dump(2);
  }

 private:
  fs::path dir_;
};

// Exit code 1 and a single stderr line containing every `needles` string.
void ExpectOneLineError(const RunResult& r,
                        const std::vector<std::string>& needles) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line:\n"
                                                << r.err;
  for (const std::string& needle : needles) {
    EXPECT_NE(r.err.find(needle), std::string::npos)
        << "missing '" << needle << "' in: " << r.err;
  }
}

TEST(CliTest, GenerateJsonMatchesHfGreedyContinuation) {
  const std::string model = testing::FixturePath("models/tiny-llama-chat");
  const nlohmann::json chat =
      nlohmann::json::parse(ReadFile(model + "/reference.json"))["chat"];
  const RunResult r =
      RunCli(absl::StrCat("generate --model ", model,
                          " --prompt 'Once upon a time' --max-new 16"
                          " --greedy --ignore-eos --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["prompt_ids"], chat["prompt_ids"]);
  EXPECT_EQ(out["ids"], chat["greedy_ids"]);
  EXPECT_EQ(out["text"], chat["greedy_text"]);
}

TEST(CliTest, PerplexityJsonHasTheDocumentedKeys) {
  const std::string model = testing::FixturePath("models/tiny-llama-chat");
  const RunResult r = RunCli(absl::StrCat(
      "perplexity --model ", model, " --text ", testing::SourcePath("LICENSE"),
      " --context 128 --stride 64 --max-tokens 400 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["metric"], "perplexity");
  EXPECT_EQ(out["tokens"], 399);
  EXPECT_EQ(out["context"], 128);
  EXPECT_EQ(out["stride"], 64);
  EXPECT_NEAR(out["value"].get<double>(),
              std::exp(out["nll_sum"].get<double>() / 399),
              1e-6 * out["value"].get<double>());
}

TEST(CliTest, TokenizeAndInspectJson) {
  const std::string model = testing::FixturePath("models/tiny-llama-chat");
  RunResult r = RunCli(absl::StrCat("tokenize --model ", model,
                                    " --string 'Once upon a time' --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ids"],
            nlohmann::json::parse(
                ReadFile(model + "/reference.json"))["chat"]["prompt_ids"]);
  r = RunCli(absl::StrCat("inspect --model ", model, " --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json info = nlohmann::json::parse(r.out);
  EXPECT_EQ(info["family"], "llama");
  EXPECT_EQ(info["num_kv_heads"], 2);
  EXPECT_GT(info["parameters"].get<int64_t>(), 0);
}

TEST(CliTest, InspectRandomPresetWithoutAllocatingIt) {
  const RunResult r = RunCli("inspect --model random:llama-2-7b --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json info = nlohmann::json::parse(r.out);
  EXPECT_EQ(info["parameters"], 6738415616);
  EXPECT_EQ(info["weights_bytes_f16"], 2 * 6738415616LL);
  EXPECT_EQ(info["num_layers"], 32);
}

TEST(CliBadInputTest, TruncatedSafetensors) {
  ModelCopy m("opt-prenorm");
  fs::resize_file(m.file("model.safetensors"),
                  fs::file_size(m.file("model.safetensors")) - 100);
  ExpectOneLineError(RunCli("inspect --model " + m.path()),
                     {"model.safetensors"});
}

TEST(CliBadInputTest, HeaderOffsetsOutOfRange) {
  ModelCopy m("opt-prenorm");
  m.EditHeader([](nlohmann::json& h) {
    h["model.decoder.layers.1.fc2.bias"]["data_offsets"][1] = 1 << 30;
  });
  ExpectOneLineError(RunCli("inspect --model " + m.path()),
                     {"model.safetensors", "model.decoder.layers.1.fc2.bias"});
}

TEST(CliBadInputTest, OverlappingOffsets) {
  ModelCopy m("opt-prenorm");
  m.EditHeader([](nlohmann::json& h) {
    h["model.decoder.layers.0.fc1.bias"]["data_offsets"] =
        h["model.decoder.layers.0.fc2.bias"]["data_offsets"];
    h["model.decoder.layers.0.fc1.bias"]["shape"] =
        h["model.decoder.layers.0.fc2.bias"]["shape"];
  });
  ExpectOneLineError(RunCli("inspect --model " + m.path()),
                     {"model.safetensors", "overlap"});
}

TEST(CliBadInputTest, MissingTensor) {
  ModelCopy m("llama-mha-tied");
  m.EditHeader(
      [](nlohmann::json& h) { h.erase("model.layers.1.mlp.up_proj.weight"); });
  ExpectOneLineError(RunCli("inspect --model " + m.path()),
                     {"model.layers.1.mlp.up_proj.weight"});
}

TEST(CliBadInputTest, WrongShape) {
  ModelCopy m("llama-mha-tied");
  m.EditHeader([](nlohmann::json& h) {
    auto& t = h["model.layers.0.mlp.down_proj.weight"];
    t["shape"] = {t["shape"][1], t["shape"][0]};  // Same bytes, transposed.
  });
  ExpectOneLineError(RunCli("inspect --model " + m.path()),
                     {"model.layers.0.mlp.down_proj.weight", "shape"});
}

TEST(CliBadInputTest, UnsupportedDtype) {
  ModelCopy m("llama-mha-tied");
  m.EditHeader(
      [](nlohmann::json& h) { h["model.norm.weight"]["dtype"] = "I32"; });
  ExpectOneLineError(RunCli("inspect --model " + m.path()),
                     {"model.norm.weight", "I32"});
}

TEST(CliBadInputTest, ConfigMissingField) {
  ModelCopy m("llama-mha-tied");
  m.EditConfig([](nlohmann::json& c) { c.erase("num_attention_heads"); });
  ExpectOneLineError(RunCli("inspect --model " + m.path()),
                     {"config.json", "num_attention_heads"});
}

TEST(CliBadInputTest, ConfigUnknownArchitecture) {
  ModelCopy m("llama-mha-tied");
  m.EditConfig(
      [](nlohmann::json& c) { c["architectures"] = {"GPTNeoXForCausalLM"}; });
  ExpectOneLineError(RunCli("inspect --model " + m.path()),
                     {"config.json", "GPTNeoXForCausalLM"});
}

TEST(CliBadInputTest, MalformedTokenizerJson) {
  ModelCopy m("tiny-llama-chat");
  std::ofstream(m.file("tokenizer.json"), std::ios::trunc)
      << "{\"model\": {\"type\": ";
  ExpectOneLineError(RunCli("generate --model " + m.path() + " --prompt hi"),
                     {"tokenizer.json"});
}

TEST(CliBadInputTest, UnknownMethodListsValidOnes) {
  ExpectOneLineError(
      RunCli("generate --model " +
             testing::FixturePath("models/tiny-llama-chat") +
             " --prompt hi --method dejavoo"),
      {"unknown method 'dejavoo' (valid: dense, dejavu, lazyllm, combined)"});
}

TEST(CliBadInputTest, MissingTextFile) {
  ExpectOneLineError(RunCli("perplexity --model " +
                            testing::FixturePath("models/tiny-llama-chat") +
                            " --text /nonexistent/wiki.txt"),
                     {"/nonexistent/wiki.txt"});
}

}  // namespace
}  // namespace dynsparse
