#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "core/io/sharded_index.h"
#include "core/io/tensor_source.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/io/safetensors_writer.h"
#include "tests/io/temp_dir.h"

namespace dynsparse {
namespace {

using ::dynsparse::testing::F32Tensor;
using ::dynsparse::testing::SerializeSafetensors;
using ::dynsparse::testing::TempDir;
using ::dynsparse::testing::WriteFileOrDie;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kShard1[] = "model-00001-of-00002.safetensors";
constexpr char kShard2[] = "model-00002-of-00002.safetensors";

class ShardedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFileOrDie(dir_.File(kShard1),
                   SerializeSafetensors({F32Tensor("a", {2}, {1, 2}),
                                         F32Tensor("b", {1}, {3})}));
    WriteFileOrDie(dir_.File(kShard2),
                   SerializeSafetensors({F32Tensor("c", {3}, {4, 5, 6})}));
  }
  std::string WriteIndex(const std::string& json) {
    const std::string path = dir_.File("model.safetensors.index.json");
    WriteFileOrDie(path, json);
    return path;
  }
  // An index mapping a and b to shard 1 and c to `c_shard`.
  static std::string Index(const std::string& c_shard) {
    const nlohmann::json index = {
        {"metadata", {{"total_size", 24}}},
        {"weight_map", {{"a", kShard1}, {"b", kShard1}, {"c", c_shard}}}};
    return index.dump();
  }

  TempDir dir_;
};

TEST_F(ShardedTest, FindsTensorsAcrossShards) {
  WriteIndex(Index(kShard2));
  absl::StatusOr<TensorSource> source = TensorSource::FromHfFolder(dir_.path());
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(source->label(), HasSubstr("model.safetensors.index.json"));
  EXPECT_THAT(source->Names(), ElementsAre("a", "b", "c"));
  EXPECT_TRUE(source->Contains("c"));
  EXPECT_FALSE(source->Contains("d"));
  EXPECT_THAT(source->PathOf("c"), HasSubstr(kShard2));
  EXPECT_THAT(source->Load("a")->ToF32Vector(), ElementsAre(1, 2));
  EXPECT_THAT(source->Load("c")->ToF32Vector(), ElementsAre(4, 5, 6));
  EXPECT_EQ(source->tensor_bytes(), 24u);
  absl::StatusOr<Tensor> d = source->Load("d");
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("model.safetensors.index.json: tensor 'd': missing"));
}

TEST_F(ShardedTest, SingleFileWinsOverIndex) {
  WriteIndex(Index(kShard2));
  WriteFileOrDie(dir_.File("model.safetensors"),
                 SerializeSafetensors({F32Tensor("only", {1}, {9})}));
  absl::StatusOr<TensorSource> source = TensorSource::FromHfFolder(dir_.path());
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(source->Names(), ElementsAre("only"));
}

TEST_F(ShardedTest, FolderWithoutCheckpoint) {
  TempDir empty;
  WriteFileOrDie(empty.File("pytorch_model.bin"), "pickle");
  absl::StatusOr<TensorSource> source =
      TensorSource::FromHfFolder(empty.path());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(
      std::string(source.status().message()),
      HasSubstr("no model.safetensors or model.safetensors.index.json"));
  EXPECT_THAT(std::string(source.status().message()),
              HasSubstr("pytorch_model.bin"));
}

TEST_F(ShardedTest, IndexNamingAMissingShard) {
  WriteIndex(Index("model-00003-of-00002.safetensors"));
  absl::StatusOr<TensorSource> source = TensorSource::FromHfFolder(dir_.path());
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(source.status().message()),
              HasSubstr("model.safetensors.index.json: shard "
                        "'model-00003-of-00002.safetensors': "));
}

TEST_F(ShardedTest, TensorMissingFromItsShard) {
  WriteIndex(Index(kShard1));  // c is really in shard 2.
  absl::StatusOr<TensorSource> source = TensorSource::FromHfFolder(dir_.path());
  ASSERT_FALSE(source.ok());
  EXPECT_THAT(
      std::string(source.status().message()),
      HasSubstr("model.safetensors.index.json: tensor 'c': mapped to "
                "shard 'model-00001-of-00002.safetensors', which has no "
                "such tensor"));
}

TEST_F(ShardedTest, PathTraversalInShardName) {
  for (const std::string bad : {"../model-00002-of-00002.safetensors",
                                "/etc/passwd", "sub/x", "..", "", "a\\..\\b"}) {
    WriteIndex(Index(bad));
    absl::StatusOr<TensorSource> source =
        TensorSource::FromHfFolder(dir_.path());
    ASSERT_FALSE(source.ok()) << bad;
    EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(source.status().message()),
                HasSubstr("model.safetensors.index.json: weight_map['c']: "
                          "shard name '" +
                          bad + "'"));
    EXPECT_THAT(std::string(source.status().message()),
                HasSubstr("path traversal"));
  }
}

TEST_F(ShardedTest, MalformedIndex) {
  const std::string label = "model.safetensors.index.json";
  EXPECT_THAT(std::string(ParseShardedIndex("{", label).status().message()),
              HasSubstr("model.safetensors.index.json: invalid JSON"));
  EXPECT_THAT(
      std::string(
          ParseShardedIndex(R"({"metadata":{}})", label).status().message()),
      HasSubstr("field 'weight_map': missing"));
  EXPECT_THAT(
      std::string(
          ParseShardedIndex(R"({"weight_map":{}})", label).status().message()),
      HasSubstr("field 'weight_map': must be a non-empty object"));
  EXPECT_THAT(std::string(ParseShardedIndex(R"({"weight_map":{"a":3}})", label)
                              .status()
                              .message()),
              HasSubstr("weight_map['a']: must be a string, got number"));
}

TEST_F(ShardedTest, ParsesIndexShardsDistinctAndSorted) {
  absl::StatusOr<ShardedIndex> index =
      ParseShardedIndex(Index(kShard2), "index.json");
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_THAT(index->shards, ElementsAre(kShard1, kShard2));
  EXPECT_EQ(index->weight_map.at("c"), kShard2);
}

}  // namespace
}  // namespace dynsparse
