// The data-movement kernels of graph_ops.h against plain host loops.
#include "kernels/cuda/graph_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/cuda/cuda_test_util.h"

namespace dynsparse::cuda {
namespace {

class GraphOpsTest : public testutil::CudaTest {};

// Rows of 50000 and 32000 words take the float4 loads, 32001 (rows off
// 16-byte boundaries) the scalar ones; a NaN never wins.
TEST_F(GraphOpsTest, ArgmaxPicksTheLowestIndexOfTheMaximum) {
  for (int64_t cols : {50000, 32000, 32001}) {
    SCOPED_TRACE(::testing::Message() << "cols " << cols);
    const int64_t rows = 5;  // More columns than threads.
    std::vector<float> x = RandomValues(rows * cols);
    x[1 * cols + 7] = 100.f;  // A tie: the lower index wins.
    x[1 * cols + 30000] = 100.f;
    x[3 * cols + cols - 1] = 50.f;  // The last column.
    x[4 * cols + 3] = std::nanf("");
    x[4 * cols + 5] = 60.f;
    const Tensor dx = Upload(Tensor::FromF32(x, {rows, cols}));
    Tensor out = PoisonedDevice(DType::kI32, {rows});
    ASSERT_TRUE(ArgmaxRows(ctx(), dx, out.data<int32_t>()).ok());
    ASSERT_TRUE(ctx().Synchronize().ok());
    absl::StatusOr<Tensor> host = ToHost(ctx(), out);
    ASSERT_TRUE(host.ok()) << host.status();
    const int32_t want[] = {-1, 7, -1, static_cast<int32_t>(cols - 1), 5};
    for (int64_t r = 0; r < rows; ++r) {
      const auto begin = x.begin() + r * cols;
      int32_t best = 0;
      for (int64_t c = 1; c < cols; ++c) {
        if (begin[c] > begin[best] || std::isnan(begin[best])) {
          best = static_cast<int32_t>(c);
        }
      }
      if (want[r] >= 0) EXPECT_EQ(best, want[r]) << "row " << r;
      EXPECT_EQ(host->data<int32_t>()[r], best)
          << "row " << r << " " << SeedMessage();
    }
  }
}

// ConvertF32 (the rounded copy cuBLAS reads) vs the host's rounding, on the
// vectorised path (aligned, any tail) and the scalar one (a view 1 float in).
TEST_F(GraphOpsTest, ConvertF32RoundsLikeTheHost) {
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kF32}) {
    for (int64_t n : {1, 7, 4096 * 3 + 3}) {
      for (int64_t offset : {0, 1}) {
        SCOPED_TRACE(::testing::Message()
                     << DTypeName(dtype) << " n=" << n << " offset=" << offset);
        const std::vector<float> values = RandomValues(n + offset);
        const Tensor all = Upload(
            Tensor::FromF32(values, {static_cast<int64_t>(values.size())}));
        const Tensor src = all.Rows(offset, offset + n);
        Tensor dst = PoisonedDevice(dtype, {n});
        ASSERT_TRUE(ConvertF32(ctx(), src, &dst).ok());
        const std::vector<float> want =
            Tensor::FromF32({values.begin() + offset, values.end()}, {n})
                .ConvertTo(dtype)
                .ToF32Vector();
        EXPECT_EQ(Download(dst), want);
      }
    }
  }
}

TEST_F(GraphOpsTest, EmbedWriteRowsAndMaskMatchHostLoops) {
  const int64_t vocab = 40, width = 24;
  const std::vector<float> table = RandomValues(vocab * width);
  const Tensor dtable =
      Upload(Tensor::FromF32(table, {vocab, width}, DType::kBF16));
  const std::vector<int32_t> ids = {3, 39, 0, 3};
  const Tensor dids = Upload(Tensor::FromI32(ids, {4}));
  Tensor emb = PoisonedDevice(DType::kF32, {4, width});
  ASSERT_TRUE(EmbedRows(ctx(), dtable, dids.data<int32_t>(), &emb).ok());
  const std::vector<float> got = Download(emb);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t c = 0; c < width; ++c) {
      EXPECT_EQ(got[i * width + c],
                BF16ToF32(F32ToBF16(table[ids[i] * width + c])));
    }
  }

  // Rows 2 and 5 of an 8-row cache get rows 0 and 1 of emb.
  Tensor cache = PoisonedDevice(DType::kF32, {8, width});
  const Tensor dpos = Upload(Tensor::FromI32({2, 5}, {2}));
  ASSERT_TRUE(
      WriteCacheRows(ctx(), emb.Rows(0, 2), dpos.data<int32_t>(), &cache).ok());
  const std::vector<float> c = Download(cache);
  for (int64_t col = 0; col < width; ++col) {
    EXPECT_EQ(c[2 * width + col], got[col]);
    EXPECT_EQ(c[5 * width + col], got[width + col]);
  }
  // An f16 cache gets the rows rounded to nearest (the unfused decode's
  // K/V write into a half model's cache); a bf16 one is refused.
  Tensor new_rows =
      Upload(Tensor::FromF32(RandomValues(2 * width), {2, width}));
  const std::vector<float> rows = Download(new_rows);
  Tensor half = PoisonedDevice(DType::kF16, {8, width});
  ASSERT_TRUE(
      WriteCacheRows(ctx(), new_rows, dpos.data<int32_t>(), &half).ok());
  const std::vector<float> h = Download(half);
  for (int64_t col = 0; col < width; ++col) {
    EXPECT_EQ(h[2 * width + col], F16ToF32(F32ToF16(rows[col])));
    EXPECT_EQ(h[5 * width + col], F16ToF32(F32ToF16(rows[width + col])));
  }
  Tensor bf16_cache = PoisonedDevice(DType::kBF16, {8, width});
  EXPECT_EQ(
      WriteCacheRows(ctx(), new_rows, dpos.data<int32_t>(), &bf16_cache).code(),
      absl::StatusCode::kInvalidArgument);

  // Units of 6 columns; row 0 keeps units {1, 3}, row 1 keeps {0, 2}.
  Tensor x = Upload(Tensor::FromF32(RandomValues(2 * width), {2, width}));
  const std::vector<float> before = Download(x);
  const Tensor keep = Upload(Tensor::FromI32({1, 3, 0, 2}, {4}));
  Tensor flags = PoisonedDevice(DType::kI32, {2});
  ASSERT_TRUE(MaskUnitsDevice(ctx(), keep.data<int32_t>(), 2, 6,
                              flags.data<uint8_t>(), &x)
                  .ok());
  const std::vector<float> after = Download(x);
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t col = 0; col < width; ++col) {
      const int64_t unit = col / 6;
      const bool kept =
          r == 0 ? (unit == 1 || unit == 3) : (unit == 0 || unit == 2);
      EXPECT_EQ(after[r * width + col], kept ? before[r * width + col] : 0.f)
          << "row " << r << " col " << col;
    }
  }
}

}  // namespace
}  // namespace dynsparse::cuda
