// Reads a file written by the reference safetensors implementation
// (tests/fixtures/io/README.md says how it was made).
#include "core/io/safetensors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_paths.h"

namespace dynsparse {
namespace {

using ::testing::ElementsAre;

TEST(ReferenceFileTest, ReadsEveryTensorTheReferenceWriterWrote) {
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(
      testing::FixturePath("io/reference_writer.safetensors"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT(file->Names(), ElementsAre("empty", "f16", "f32", "i64", "u8"));
  EXPECT_EQ(file->metadata().at("format"), "np");

  EXPECT_THAT(file->Load("f32")->ToF32Vector(),
              ElementsAre(0, 0.25, 0.5, 0.75, 1.0, 1.25));
  EXPECT_EQ(file->Load("f32")->shape(), (Shape{2, 3}));
  EXPECT_THAT(file->Load("f16", DType::kF32)->ToF32Vector(),
              ElementsAre(1.0, -2.0, 0.5));
  absl::StatusOr<Tensor> ids = file->Load("i64");
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->data<int32_t>()[2], 50256);
  absl::StatusOr<Tensor> empty = file->Load("empty");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), (Shape{0, 4}));
  EXPECT_FALSE(file->Load("u8").ok());  // Recognised but not loadable.
}

}  // namespace
}  // namespace dynsparse
