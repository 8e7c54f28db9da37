#include "core/io/safetensors.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/io/safetensors_writer.h"
#include "tests/io/temp_dir.h"

namespace dynsparse {
namespace {

using ::dynsparse::testing::BytesOf;
using ::dynsparse::testing::F32Tensor;
using ::dynsparse::testing::RawSafetensors;
using ::dynsparse::testing::SerializeSafetensors;
using ::dynsparse::testing::StTensor;
using ::dynsparse::testing::TempDir;
using ::dynsparse::testing::WriteFileOrDie;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<uint16_t> Bits(const Tensor& t) {
  const uint16_t* p = t.data<uint16_t>();
  return std::vector<uint16_t>(p, p + t.numel());
}

class SafetensorsTest : public ::testing::Test {
 protected:
  // Writes `bytes` as model.safetensors and returns its path.
  std::string Write(const std::string& bytes) {
    const std::string path = dir_.File("model.safetensors");
    WriteFileOrDie(path, bytes);
    return path;
  }
  // Opens a file whose header is `header` over `data_bytes` zero bytes and
  // returns the error, which must name the file.
  absl::Status OpenError(const std::string& header, size_t data_bytes = 64) {
    const std::string path =
        Write(RawSafetensors(header, std::string(data_bytes, '\0')));
    absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
    EXPECT_FALSE(file.ok());
    if (file.ok()) return absl::OkStatus();
    EXPECT_THAT(std::string(file.status().message()),
                HasSubstr("model.safetensors: "));
    return file.status();
  }

  TempDir dir_;
};

TEST_F(SafetensorsTest, RoundTripsTensorsAndMetadata) {
  const std::string path =
      Write(SerializeSafetensors({F32Tensor("a", {2, 3}, {1, 2, 3, 4, 5, 6}),
                                  F32Tensor("b.bias", {2}, {-0.5f, 0.25f})},
                                 {{"format", "pt"}}));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT(file->Names(), ElementsAre("a", "b.bias"));
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_EQ(file->tensor_bytes(), 32u);
  ASSERT_NE(file->Find("a"), nullptr);
  EXPECT_EQ(file->Find("a")->shape, (Shape{2, 3}));
  EXPECT_EQ(file->Find("missing"), nullptr);

  absl::StatusOr<Tensor> a = file->Load("a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dtype(), DType::kF32);
  EXPECT_EQ(a->shape(), (Shape{2, 3}));
  EXPECT_THAT(a->ToF32Vector(), ElementsAre(1, 2, 3, 4, 5, 6));
  absl::StatusOr<Tensor> b = file->Load("b.bias");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(b->ToF32Vector(), ElementsAre(-0.5f, 0.25f));
}

TEST_F(SafetensorsTest, UnconvertedLoadIsAViewThatOutlivesTheFile) {
  const std::string path =
      Write(SerializeSafetensors({F32Tensor("w", {4}, {1, 2, 3, 4})}));
  Tensor view, again, copy;
  {
    absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    view = *file->Load("w", DType::kF32);
    again = *file->Load("w", DType::kF32);
    copy = *file->Load("w", DType::kBF16);
  }
  // Two views share the mapped bytes; a conversion has its own.
  EXPECT_EQ(view.raw_data(), again.raw_data());
  EXPECT_NE(copy.raw_data(), view.raw_data());
  EXPECT_EQ(copy.dtype(), DType::kBF16);
  // The mapping lives on in the tensors after the file object is gone.
  EXPECT_THAT(view.ToF32Vector(), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(copy.ToF32Vector(), ElementsAre(1, 2, 3, 4));
  // Copy-on-write mapping: writing through a view neither faults nor
  // changes the file.
  view.data<float>()[0] = 42.0f;
  absl::StatusOr<SafetensorsFile> reopened = SafetensorsFile::Open(path);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(reopened->Load("w")->ToF32Vector()[0], 1.0f);
}

TEST_F(SafetensorsTest, ConvertsBetweenFloatTypesWithKnownBits) {
  // 1, -2, 1/3 (rounded), 65504 (max), smallest subnormal.
  const std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x3555, 0x7bff, 0x0001};
  // 1, -3, 0.333984375.
  const std::vector<uint16_t> bf16 = {0x3f80, 0xc040, 0x3eab};
  const std::string path = Write(SerializeSafetensors({
      StTensor{"h", "F16", {5}, BytesOf(f16)},
      StTensor{"b", "BF16", {3}, BytesOf(bf16)},
      F32Tensor("f", {3}, {1.0f, 0.1f, 1.0f / 3}),
  }));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();

  absl::StatusOr<Tensor> h = file->Load("h", DType::kF32);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_THAT(h->ToF32Vector(), ElementsAre(1.0f, -2.0f, 0.333251953125f,
                                            65504.0f, 5.9604644775390625e-08f));
  EXPECT_EQ(file->Load("h")->dtype(), DType::kF16);  // Natural: stays f16.
  EXPECT_THAT(Bits(*file->Load("h", DType::kF16)), ElementsAreArray(f16));

  absl::StatusOr<Tensor> b = file->Load("b", DType::kF32);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(b->ToF32Vector(), ElementsAre(1.0f, -3.0f, 0.333984375f));

  // f32 -> f16 / bf16 round to nearest even: 0.1 -> 0x2e66 / 0x3dcd.
  EXPECT_THAT(Bits(*file->Load("f", DType::kF16)),
              ElementsAre(0x3c00, 0x2e66, 0x3555));
  EXPECT_THAT(Bits(*file->Load("f", DType::kBF16)),
              ElementsAre(0x3f80, 0x3dcd, 0x3eab));
  // f16 -> bf16 goes through f32 exactly.
  EXPECT_THAT(Bits(*file->Load("h", DType::kBF16)),
              ElementsAre(0x3f80, 0xc000, 0x3eab, 0x4780, 0x3380));
}

TEST_F(SafetensorsTest, NarrowsF64AndI64) {
  const std::string path = Write(SerializeSafetensors({
      StTensor{"d", "F64", {3}, BytesOf(std::vector<double>{0.5, -1.25, 1e10})},
      StTensor{"ids", "I64", {3}, BytesOf(std::vector<int64_t>{0, -7, 50256})},
      StTensor{"i32", "I32", {2}, BytesOf(std::vector<int32_t>{3, 4})},
  }));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<Tensor> d = file->Load("d");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->dtype(), DType::kF32);
  EXPECT_THAT(d->ToF32Vector(), ElementsAre(0.5f, -1.25f, 1e10f));
  absl::StatusOr<Tensor> ids = file->Load("ids");
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->dtype(), DType::kI32);
  EXPECT_THAT(
      std::vector<int32_t>(ids->data<int32_t>(), ids->data<int32_t>() + 3),
      ElementsAre(0, -7, 50256));
  EXPECT_EQ(file->Load("i32", DType::kI32)->data<int32_t>()[1], 4);
}

TEST_F(SafetensorsTest, I64OutOfI32RangeIsAnError) {
  const std::vector<int64_t> big = {int64_t{1} << 40};
  const std::string path =
      Write(SerializeSafetensors({StTensor{"ids", "I64", {1}, BytesOf(big)}}));
  absl::StatusOr<Tensor> ids = SafetensorsFile::Open(path)->Load("ids");
  ASSERT_FALSE(ids.ok());
  EXPECT_THAT(std::string(ids.status().message()), HasSubstr("tensor 'ids'"));
  EXPECT_THAT(std::string(ids.status().message()),
              HasSubstr("does not fit in i32"));
}

TEST_F(SafetensorsTest, MisalignedDataIsCopiedNotViewed) {
  // A 9-byte header puts the data at byte 17: not 4-byte aligned.
  const std::string header =
      R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string padded = header + std::string(1, ' ');
  std::string data = BytesOf(std::vector<float>{1.5f, -2.5f});
  const std::string bytes = RawSafetensors(padded, data);
  ASSERT_NE((8 + padded.size()) % 4, 0u);
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(Write(bytes));
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<Tensor> w = file->Load("w", DType::kF32);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w->raw_data()) % alignof(float), 0u);
  EXPECT_THAT(w->ToF32Vector(), ElementsAre(1.5f, -2.5f));
}

TEST_F(SafetensorsTest, EmptyHeaderObjectHasNoTensors) {
  absl::StatusOr<SafetensorsFile> file =
      SafetensorsFile::Open(Write(RawSafetensors("{}", "")));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE(file->tensors().empty());
}

// --- Bad input: one test per class; each error names the file and the field.

TEST_F(SafetensorsTest, MissingFileIsNotFound) {
  absl::StatusOr<SafetensorsFile> file =
      SafetensorsFile::Open(dir_.File("absent.safetensors"));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(file.status().message()),
              HasSubstr("absent.safetensors"));
}

TEST_F(SafetensorsTest, FileShorterThanLengthFieldIsTruncated) {
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(Write("abc"));
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(std::string(file.status().message()),
              HasSubstr("model.safetensors: truncated: 3 bytes"));
}

TEST_F(SafetensorsTest, TruncatedDataNamesTheCutTensor) {
  std::string bytes = SerializeSafetensors(
      {F32Tensor("a", {2}, {1, 2}), F32Tensor("b", {4}, {1, 2, 3, 4})});
  bytes.resize(bytes.size() - 4);
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(Write(bytes));
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(std::string(file.status().message()),
              HasSubstr("model.safetensors: tensor 'b': data_offsets [8,24) "
                        "exceed data size 20 (truncated file?)"));
}

TEST_F(SafetensorsTest, HeaderLengthLargerThanFile) {
  absl::StatusOr<SafetensorsFile> file =
      SafetensorsFile::Open(Write(RawSafetensors("{}", "", 1000)));
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(std::string(file.status().message()),
              HasSubstr("model.safetensors: header length 1000 exceeds the 2 "
                        "bytes after the length field"));
}

TEST_F(SafetensorsTest, HeaderLengthAboveCap) {
  absl::StatusOr<SafetensorsFile> file =
      SafetensorsFile::Open(Write(RawSafetensors("{}", "", int64_t{1} << 40)));
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(std::string(file.status().message()),
              HasSubstr("exceeds the 100000000-byte limit"));
}

TEST_F(SafetensorsTest, HeaderNotJson) {
  const absl::Status status = OpenError(R"({"w": {"dtype": "F32",)");
  EXPECT_THAT(std::string(status.message()), HasSubstr("header: invalid JSON"));
}

TEST_F(SafetensorsTest, HeaderNotAnObject) {
  EXPECT_THAT(std::string(OpenError("[1, 2]").message()),
              HasSubstr("header must be a JSON object, got array"));
}

TEST_F(SafetensorsTest, DeeplyNestedHeaderIsRefusedNotRecursed) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THAT(std::string(OpenError(deep).message()),
              HasSubstr("nesting deeper than"));
}

TEST_F(SafetensorsTest, OffsetsOutOfRange) {
  const absl::Status status = OpenError(
      R"({"w":{"dtype":"F32","shape":[100],"data_offsets":[0,400]}})", 16);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("model.safetensors: tensor 'w': data_offsets [0,400) "
                        "exceed data size 16"));
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
}

TEST_F(SafetensorsTest, OffsetsEndBeforeBegin) {
  EXPECT_THAT(
      std::string(
          OpenError(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})")
              .message()),
      HasSubstr("tensor 'w': data_offsets [8,4) end before they begin"));
}

TEST_F(SafetensorsTest, OverlappingOffsets) {
  const absl::Status status =
      OpenError(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})");
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("tensor 'b': data_offsets [8,24) overlap tensor 'a' "
                        "at [0,16)"));
}

TEST_F(SafetensorsTest, OffsetsNotMatchingShapeAndDType) {
  EXPECT_THAT(
      std::string(
          OpenError(
              R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,16]}})")
              .message()),
      HasSubstr("tensor 'w': data_offsets [0,16) hold 16 bytes but F32[2,3] "
                "needs 24"));
}

TEST_F(SafetensorsTest, NegativeShape) {
  EXPECT_THAT(
      std::string(
          OpenError(
              R"({"w":{"dtype":"F32","shape":[-1,4],"data_offsets":[0,16]}})")
              .message()),
      HasSubstr("tensor 'w': shape[0] is -1, must be non-negative"));
}

TEST_F(SafetensorsTest, OverflowingShape) {
  EXPECT_THAT(
      std::string(OpenError(R"({"w":{"dtype":"F32","shape":[4294967296,)"
                            R"(4294967296],"data_offsets":[0,16]}})")
                      .message()),
      HasSubstr("tensor 'w': shape [4294967296,4294967296] of F32 "
                "overflows"));
  EXPECT_THAT(
      std::string(
          OpenError(R"({"w":{"dtype":"U8","shape":[18446744073709551615],)"
                    R"("data_offsets":[0,16]}})")
              .message()),
      HasSubstr("tensor 'w': shape[0] is 18446744073709551615, too "
                "large"));
}

TEST_F(SafetensorsTest, ShapeOfWrongType) {
  EXPECT_THAT(
      std::string(
          OpenError(
              R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})")
              .message()),
      HasSubstr("tensor 'w': shape[0] must be an integer, got number"));
  EXPECT_THAT(
      std::string(
          OpenError(R"({"w":{"dtype":"F32","shape":4,"data_offsets":[0,4]}})")
              .message()),
      HasSubstr("tensor 'w': field 'shape' must be an array"));
}

TEST_F(SafetensorsTest, MissingEntryFields) {
  EXPECT_THAT(
      std::string(
          OpenError(R"({"w":{"shape":[1],"data_offsets":[0,4]}})").message()),
      HasSubstr("tensor 'w': field 'dtype' missing"));
  EXPECT_THAT(
      std::string(OpenError(R"({"w":{"dtype":"F32","shape":[1]}})").message()),
      HasSubstr("tensor 'w': field 'data_offsets' missing"));
  EXPECT_THAT(
      std::string(
          OpenError(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})")
              .message()),
      HasSubstr("tensor 'w': field 'data_offsets' must be an array of two"));
  EXPECT_THAT(std::string(OpenError(R"({"w":7})").message()),
              HasSubstr("tensor 'w': entry must be an object"));
}

TEST_F(SafetensorsTest, UnknownDTypeAtParse) {
  EXPECT_THAT(
      std::string(
          OpenError(R"({"w":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}})")
              .message()),
      HasSubstr("tensor 'w': unknown dtype 'F4'"));
}

TEST_F(SafetensorsTest, UnsupportedDTypeAtLoad) {
  const std::string path = Write(SerializeSafetensors(
      {StTensor{"q", "I8", {4}, std::string(4, '\1')},
       StTensor{"e4m3", "F8_E4M3", {2}, std::string(2, '\0')}}));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();  // Recognised, so it parses.
  absl::StatusOr<Tensor> q = file->Load("q", DType::kF32);
  EXPECT_EQ(q.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(q.status().message()),
              HasSubstr("model.safetensors: tensor 'q': unsupported dtype I8"));
  EXPECT_THAT(std::string(file->Load("e4m3").status().message()),
              HasSubstr("tensor 'e4m3': unsupported dtype F8_E4M3"));
}

TEST_F(SafetensorsTest, FloatsCannotLoadAsIds) {
  const std::string path =
      Write(SerializeSafetensors({F32Tensor("w", {1}, {1.0f})}));
  absl::StatusOr<Tensor> w =
      SafetensorsFile::Open(path)->Load("w", DType::kI32);
  EXPECT_THAT(std::string(w.status().message()),
              HasSubstr("tensor 'w': dtype F32 cannot be loaded as i32"));
}

TEST_F(SafetensorsTest, MissingTensorOnLoad) {
  const std::string path =
      Write(SerializeSafetensors({F32Tensor("w", {1}, {1.0f})}));
  absl::StatusOr<Tensor> t = SafetensorsFile::Open(path)->Load("nope");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("model.safetensors: tensor 'nope': missing"));
}

TEST_F(SafetensorsTest, MetadataMustHoldStrings) {
  EXPECT_THAT(
      std::string(OpenError(R"({"__metadata__":{"format":1}})").message()),
      HasSubstr("__metadata__: value of 'format' must be a string"));
}

}  // namespace
}  // namespace dynsparse
