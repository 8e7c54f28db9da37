// Causal attention on the CPU. Work is split into (block of query rows, head)
// tasks; each task computes its scores with one Eigen GEMM against the keys
// visible to the block, a max-subtracted softmax per row (masking keys past
// the row's own position), and one GEMM with V. Blocks bound the score
// buffer to kBlockRows x keys, so long contexts never hold an n x n matrix.
// With key_positions (token pruning) the listed K/V rows are first gathered
// into contiguous buffers, and a row sees the keys whose position precedes
// its own.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/cpu_softmax.h"

namespace dynsparse::cpu {
namespace {

using RowMatrix =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using StridedMap = Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>>;
using ConstStridedMap = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;

constexpr int64_t kBlockRows = 64;

}  // namespace

void Attention(const AttentionArgs& a) {
  const int64_t n = a.q->dim(0);
  const int64_t hd = a.head_dim;
  const int64_t group = a.num_heads / a.num_kv_heads;
  const int64_t q_stride = a.num_heads * hd;
  const int64_t kv_stride = a.num_kv_heads * hd;
  const int64_t blocks = (n + kBlockRows - 1) / kBlockRows;

  const float* k_base = a.k_cache->data<float>();
  const float* v_base = a.v_cache->data<float>();
  std::vector<float> k_gathered, v_gathered;
  const bool listed = !a.key_positions.empty();
  if (listed) {
    const int64_t nk = a.num_keys;
    k_gathered.resize(static_cast<size_t>(nk * kv_stride));
    v_gathered.resize(static_cast<size_t>(nk * kv_stride));
    for (int64_t j = 0; j < nk; ++j) {
      const int64_t row = a.key_positions[j];
      std::memcpy(k_gathered.data() + j * kv_stride, k_base + row * kv_stride,
                  kv_stride * sizeof(float));
      std::memcpy(v_gathered.data() + j * kv_stride, v_base + row * kv_stride,
                  kv_stride * sizeof(float));
    }
    k_base = k_gathered.data();
    v_base = v_gathered.data();
  }
  // Keys visible at position p: a prefix of the (ascending) key list.
  auto visible_keys = [&](int64_t p) -> int64_t {
    if (!listed) return std::min<int64_t>(a.num_keys, p + 1);
    const int32_t* first = a.key_positions.data();
    return std::upper_bound(first, first + a.num_keys, p) - first;
  };

#pragma omp parallel
  {
    RowMatrix scores;
#pragma omp for collapse(2) schedule(dynamic, 1)
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t h = 0; h < a.num_heads; ++h) {
        const int64_t row0 = b * kBlockRows;
        const int64_t rows = std::min(kBlockRows, n - row0);
        int64_t keys = 0;
        for (int64_t r = 0; r < rows; ++r) {
          keys = std::max(keys, visible_keys(a.query_positions[row0 + r]));
        }
        const int64_t kv_head = h / group;
        ConstStridedMap q(a.q->data<float>() + row0 * q_stride + h * hd, rows,
                          hd, Eigen::OuterStride<>(q_stride));
        ConstStridedMap k(k_base + kv_head * hd, keys, hd,
                          Eigen::OuterStride<>(kv_stride));
        ConstStridedMap v(v_base + kv_head * hd, keys, hd,
                          Eigen::OuterStride<>(kv_stride));
        scores.resize(rows, keys);
        scores.noalias() = (q * k.transpose()) * a.scale;
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t visible =
              std::min(keys, visible_keys(a.query_positions[row0 + r]));
          float* s = scores.row(r).data();
          SoftmaxInPlace(s, visible);
          std::fill(s + visible, s + keys, 0.0f);
        }
        StridedMap out(a.out->data<float>() + row0 * q_stride + h * hd, rows,
                       hd, Eigen::OuterStride<>(q_stride));
        out.noalias() = scores * v;
      }
    }
  }
}

}  // namespace dynsparse::cpu
