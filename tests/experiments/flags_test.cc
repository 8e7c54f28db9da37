#include "experiments/cli/flags.h"

#include "gtest/gtest.h"

namespace dynsparse {
namespace {

const std::vector<FlagSpec> kSpecs = {
    {"model", FlagKind::kValue, "model"},
    {"context", FlagKind::kValue, "context", "1024"},
    {"json", FlagKind::kSwitch, "json"},
    {"method-arg", FlagKind::kRepeated, "k=v"},
};

TEST(FlagsTest, ParsesValuesSwitchesAndRepeats) {
  auto flags = ParseFlags({"--model", "m", "--json", "--method-arg=a=1",
                           "--method-arg", "b=2", "extra"},
                          kSpecs, Positional::kAllowed);
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->Get("model"), "m");
  EXPECT_TRUE(flags->Has("json"));
  EXPECT_EQ(flags->GetAll("method-arg"),
            (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_EQ(*flags->GetInt("context"), 1024);  // The default.
  EXPECT_EQ(flags->positional(), (std::vector<std::string>{"extra"}));
}

// A command without positional arguments rejects a stray word, such as an
// environment assignment placed after the program name.
TEST(FlagsTest, StrayWordsAreErrorsWhereNoneAreTaken) {
  auto flags = ParseFlags({"DYNSPARSE_CUDA_PDL=0", "--model", "m"}, kSpecs);
  ASSERT_FALSE(flags.ok());
  EXPECT_EQ(flags.status().message(),
            "unexpected argument 'DYNSPARSE_CUDA_PDL=0': this command takes "
            "only --flags (environment variables go before the program name)");
  // A flag's value is not a stray word.
  EXPECT_TRUE(ParseFlags({"--model", "m=1"}, kSpecs).ok());
}

TEST(FlagsTest, UnknownFlagListsValidOnes) {
  auto flags = ParseFlags({"--modle", "x"}, kSpecs);
  ASSERT_FALSE(flags.ok());
  EXPECT_EQ(flags.status().message(),
            "unknown flag --modle (valid: --model, --context, --json, "
            "--method-arg)");
}

TEST(FlagsTest, MissingValueAndRepeatsAreErrors) {
  EXPECT_EQ(ParseFlags({"--model"}, kSpecs).status().message(),
            "--model needs a value");
  EXPECT_EQ(
      ParseFlags({"--model", "a", "--model", "b"}, kSpecs).status().message(),
      "--model given more than once");
  EXPECT_EQ(ParseFlags({"--json=1"}, kSpecs).status().message(),
            "--json takes no value");
  auto flags = ParseFlags({"--context", "big"}, kSpecs);
  EXPECT_EQ(flags->GetInt("context").status().message(),
            "--context: 'big' is not an integer");
}

}  // namespace
}  // namespace dynsparse
