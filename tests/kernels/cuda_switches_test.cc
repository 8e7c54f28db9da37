// The DYNSPARSE_CUDA_* switches parse without a GPU: applied values land in
// the options, and a typo or a value the backend cannot use is an error that
// names the variable.
#include "kernels/cuda/cuda_switches.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace dynsparse::cuda {
namespace {

using ::testing::HasSubstr;

absl::Status Apply(std::vector<absl::string_view> env,
                   CudaBackendOptions* options) {
  return ApplyCudaSwitches(env, options);
}

TEST(CudaSwitchesTest, NoSwitchesLeaveTheOptions) {
  CudaBackendOptions o;
  o.fuse_norm = false;
  o.decode_chunk_keys = 32;
  ASSERT_TRUE(Apply({"PATH=/usr/bin", "DYNSPARSE_DATA=/data"}, &o).ok());
  EXPECT_FALSE(o.fuse_norm);
  EXPECT_EQ(o.decode_chunk_keys, 32);
  EXPECT_TRUE(o.flash_prefill_attention);
}

// The toggles a CUDA test runs (every switch off its default) apply cleanly,
// and each moves its option: FUSE off, DECODE_STACK (off by default) on.
TEST(CudaSwitchesTest, EachOptionToggleMovesItsOption) {
  const std::vector<OptionToggle> toggles = OptionToggles();
  EXPECT_GE(toggles.size(), 10u);
  std::vector<std::string> names;
  for (const OptionToggle& t : toggles) {
    const std::string var = t.Assignment();
    CudaBackendOptions o;
    EXPECT_TRUE(Apply({var}, &o).ok()) << var;
    names.emplace_back(t.name);
    if (t.name == "FUSE") EXPECT_FALSE(o.fused_ops) << var;
    if (t.name == "DECODE_STACK") EXPECT_TRUE(o.decode_stack) << var;
    if (t.name == "KV_F16") EXPECT_FALSE(o.f16_kv_cache) << var;
    if (t.name == "ATTENTION_CLUSTER") {
      EXPECT_FALSE(o.cluster_decode_attention) << var;
    }
    if (t.name == "EARLY_KV") EXPECT_FALSE(o.early_kv_loads) << var;
    if (t.name == "EARLY_MLP") EXPECT_FALSE(o.early_mlp_copies) << var;
    if (t.name == "MLP_SUM_IN_KERNEL") {
      EXPECT_TRUE(o.fused_mlp_sum_in_kernel) << var;
    }
    if (t.name == "ROW_GROUPS") EXPECT_FALSE(o.fused_row_groups) << var;
    if (t.name == "TOP_COUNT") EXPECT_FALSE(o.top_count) << var;
    if (t.name == "TOP_COUNT_BINS") EXPECT_FALSE(o.top_count_bins) << var;
  }
  EXPECT_THAT(names, ::testing::Contains("FUSE"));
  EXPECT_THAT(names, ::testing::Contains("DECODE_STACK"));
  EXPECT_THAT(names, ::testing::Contains("TOP_COUNT"));
  // PDL, EARLY_LOADS, STORE_PREFETCH and GEMV_BOUNDS set no option field
  // (DeviceContext reads them).
  EXPECT_THAT(names, ::testing::Not(::testing::Contains("PDL")));
}

TEST(CudaSwitchesTest, ZeroTurnsOffAndOneLeavesAsGiven) {
  CudaBackendOptions o;
  o.gated_pairs = false;
  ASSERT_TRUE(
      Apply({"DYNSPARSE_CUDA_FLASH_PREFILL=0", "DYNSPARSE_CUDA_FUSE_NORM=0",
             "DYNSPARSE_CUDA_GATED_PAIRS=1", "DYNSPARSE_CUDA_FUSE=1",
             "DYNSPARSE_CUDA_ROUNDED_NORM=0", "DYNSPARSE_CUDA_LAZY_MMA=0",
             "DYNSPARSE_CUDA_STAGE_ONCE=0", "DYNSPARSE_CUDA_TOPK_CLUSTER=0",
             "DYNSPARSE_CUDA_PIPELINED_SPLITS=0",
             "DYNSPARSE_CUDA_MLP_ONE_BLOCK=0"},
            &o)
          .ok());
  EXPECT_FALSE(o.pipelined_split_attention);
  EXPECT_FALSE(o.fused_mlp_one_block_an_sm);
  EXPECT_FALSE(o.stage_once);
  EXPECT_FALSE(o.topk_cluster);
  EXPECT_FALSE(o.rounded_norm_output);
  EXPECT_FALSE(o.lazy_kv_tensor_cores);
  EXPECT_FALSE(o.flash_prefill_attention);
  EXPECT_FALSE(o.fuse_norm);
  EXPECT_FALSE(o.gated_pairs);
  EXPECT_TRUE(o.fused_ops);
  EXPECT_TRUE(o.split_prefill_attention);
}

// The decode stack is off by default, so its "1" turns it on.
TEST(CudaSwitchesTest, OneTurnsOnWhatIsOffByDefault) {
  CudaBackendOptions o;
  EXPECT_FALSE(o.decode_stack);
  ASSERT_TRUE(Apply({"DYNSPARSE_CUDA_DECODE_STACK=1"}, &o).ok());
  EXPECT_TRUE(o.decode_stack);
  ASSERT_TRUE(Apply({"DYNSPARSE_CUDA_DECODE_STACK=0"}, &o).ok());
  EXPECT_FALSE(o.decode_stack);
}

TEST(CudaSwitchesTest, NumbersLandInTheOptions) {
  CudaBackendOptions o;
  ASSERT_TRUE(
      Apply({"DYNSPARSE_CUDA_TC_ATTENTION_ROWS=9",
             "DYNSPARSE_CUDA_FUSE_ATTENTION_MAX_KEYS=0",
             "DYNSPARSE_CUDA_DECODE_CHUNK=16",
             "DYNSPARSE_CUDA_TC_KEYED_ATTENTION_ROWS=256",
             "DYNSPARSE_CUDA_TC_DECODE_KEYS=1024",
             "DYNSPARSE_CUDA_SPARSE_ROWS=4", "DYNSPARSE_CUDA_LAZY_MMA_BLOCKS=2",
             "DYNSPARSE_CUDA_FUSED_MLP=2", "DYNSPARSE_CUDA_MLP_CLUSTER=4",
             "DYNSPARSE_CUDA_ACCUMULATE_EARLY_EVERY=0"},
            &o)
          .ok());
  EXPECT_EQ(o.sparse_rows_per_warp, 4);
  EXPECT_EQ(o.lazy_kv_mma_blocks_per_sm, 2);
  EXPECT_EQ(o.fused_sparse_mlp, 2);
  EXPECT_EQ(o.fused_sparse_mlp_cluster, 4);
  EXPECT_EQ(o.tensor_core_keyed_attention_rows, 256);
  EXPECT_EQ(o.tensor_core_decode_attention_keys, 1024);
  EXPECT_EQ(o.tensor_core_attention_rows, 9);
  EXPECT_EQ(o.fused_decode_attention_max_keys, 0);
  EXPECT_EQ(o.decode_chunk_keys, 16);
  EXPECT_EQ(o.accumulate_early_every, 0);
}

TEST(CudaSwitchesTest, SwitchesReadElsewhereAreCheckedOnly) {
  CudaBackendOptions o;
  EXPECT_TRUE(
      Apply({"DYNSPARSE_CUDA_PDL=0", "DYNSPARSE_CUDA_EARLY_LOADS=1",
             "DYNSPARSE_CUDA_GEMV_BOUNDS=0", "DYNSPARSE_CUDA_DEEP_MMA=0",
             "DYNSPARSE_CUDA_WEIGHTS_EVICT_FIRST=1",
             "DYNSPARSE_CUDA_ARCHS=80-virtual;90a-real"},
            &o)
          .ok());
  EXPECT_FALSE(Apply({"DYNSPARSE_CUDA_GEMV_BOUNDS=2"}, &o).ok());
  EXPECT_FALSE(Apply({"DYNSPARSE_CUDA_WEIGHTS_EVICT_FIRST=yes"}, &o).ok());
}

TEST(CudaSwitchesTest, FlashConfigIsABuiltBlockShape) {
  CudaBackendOptions o;
  EXPECT_EQ(o.flash_prefill_config.warps, 4);
  EXPECT_EQ(o.flash_prefill_config.min_blocks, 2);
  ASSERT_TRUE(Apply({"DYNSPARSE_CUDA_FLASH_CONFIG=8x1"}, &o).ok());
  EXPECT_EQ(o.flash_prefill_config.warps, 8);
  EXPECT_EQ(o.flash_prefill_config.min_blocks, 1);
  ASSERT_TRUE(Apply({"DYNSPARSE_CUDA_FLASH_CONFIG=4x3"}, &o).ok());
  EXPECT_EQ(o.flash_prefill_config.warps, 4);
  EXPECT_EQ(o.flash_prefill_config.min_blocks, 3);
  const absl::Status s = Apply({"DYNSPARSE_CUDA_FLASH_CONFIG=4x4"}, &o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("DYNSPARSE_CUDA_FLASH_CONFIG='4x4'"));
  EXPECT_THAT(s.message(), HasSubstr("4x2|4x3|8x1"));
  EXPECT_EQ(o.flash_prefill_config.min_blocks, 3);
}

TEST(CudaSwitchesTest, BadValuesNameTheVariableAndWhatItTakes) {
  struct Case {
    absl::string_view entry, expected;
  };
  const Case cases[] = {
      {"DYNSPARSE_CUDA_FUSE_NORM=false", "0 or 1"},
      {"DYNSPARSE_CUDA_PDL=", "0 or 1"},
      {"DYNSPARSE_CUDA_DECODE_CHUNK=48", "one of 16|32|64"},
      {"DYNSPARSE_CUDA_SPARSE_ROWS=1", "one of 0|2|4"},
      {"DYNSPARSE_CUDA_LAZY_MMA_BLOCKS=4", "one of 0|2|3"},
      {"DYNSPARSE_CUDA_MLP_ONE_BLOCK=2", "0 or 1"},
      {"DYNSPARSE_CUDA_TC_ATTENTION_ROWS=0", "a whole number >= 1"},
      {"DYNSPARSE_CUDA_TC_ATTENTION_ROWS=9rows", "a whole number >= 1"},
      {"DYNSPARSE_CUDA_FUSE_ATTENTION_MAX_KEYS=-1", "a whole number >= 0"},
  };
  for (const Case& c : cases) {
    CudaBackendOptions o;
    const absl::Status s = Apply({c.entry}, &o);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.entry;
    const absl::string_view name = c.entry.substr(0, c.entry.find('='));
    EXPECT_THAT(s.message(), HasSubstr(std::string(name))) << c.entry;
    EXPECT_THAT(s.message(), HasSubstr(std::string(c.expected))) << c.entry;
  }
}

TEST(CudaSwitchesTest, UnknownNameIsAnErrorListingTheKnownOnes) {
  CudaBackendOptions o;
  const absl::Status s = Apply({"DYNSPARSE_CUDA_FUSE_NROM=0"}, &o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      s.message(),
      HasSubstr("unknown environment variable DYNSPARSE_CUDA_FUSE_NROM"));
  EXPECT_THAT(s.message(), HasSubstr("FUSE_NORM"));
  EXPECT_TRUE(o.fuse_norm);
}

TEST(CudaSwitchesTest, ProcessEnvironmentSeesSetVariables) {
  ASSERT_EQ(setenv("DYNSPARSE_CUDA_SWITCHES_TEST", "1", 1), 0);
  const std::vector<absl::string_view> env = ProcessEnvironment();
  EXPECT_THAT(env, ::testing::Contains("DYNSPARSE_CUDA_SWITCHES_TEST=1"));
  CudaBackendOptions o;
  EXPECT_FALSE(ApplyCudaSwitches(env, &o).ok());
  ASSERT_EQ(unsetenv("DYNSPARSE_CUDA_SWITCHES_TEST"), 0);
}

}  // namespace
}  // namespace dynsparse::cuda
