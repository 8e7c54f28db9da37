#include "gtest/gtest.h"
#include "methods/registry.h"

namespace dynsparse {
namespace {

TEST(MethodRegistryTest, CreatesDense) {
  auto method = CreateMethod("dense", MethodArgs());
  ASSERT_TRUE(method.ok()) << method.status();
  EXPECT_EQ((*method)->name(), "dense");
}

TEST(MethodRegistryTest, UnknownMethodListsValidNames) {
  auto method = CreateMethod("dejavoo", MethodArgs());
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.status().message(),
            "unknown method 'dejavoo' (valid: dense, dejavu, lazyllm, "
            "combined)");
}

TEST(MethodRegistryTest, UnknownParameterIsAnError) {
  auto args = MethodArgs::Parse({"mlp_keep=0.5"});
  ASSERT_TRUE(args.ok());
  auto method = CreateMethod("dense", *args);
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.status().message(),
            "method 'dense' has no parameter 'mlp_keep' (valid: none)");
}

TEST(MethodArgsTest, ParsesAndTypes) {
  auto args =
      MethodArgs::Parse({"keep=0.7", "stages=4", "revive=false", "x=a=b"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_DOUBLE_EQ(*args->GetDouble("keep", 1.0), 0.7);
  EXPECT_EQ(*args->GetInt("stages", 1), 4);
  EXPECT_FALSE(*args->GetBool("revive", true));
  EXPECT_EQ(args->GetString("x", ""), "a=b");
  EXPECT_DOUBLE_EQ(*args->GetDouble("absent", 0.25), 0.25);
}

TEST(MethodArgsTest, RejectsMalformedItems) {
  EXPECT_EQ(MethodArgs::Parse({"keep"}).status().message(),
            "--method-arg 'keep': expected key=value");
  EXPECT_EQ(MethodArgs::Parse({"k=1", "k=2"}).status().message(),
            "--method-arg 'k' given twice");
  auto args = MethodArgs::Parse({"stages=four"});
  EXPECT_EQ(args->GetInt("stages", 1).status().message(),
            "method parameter 'stages': 'four' is not an integer");
}

}  // namespace
}  // namespace dynsparse
