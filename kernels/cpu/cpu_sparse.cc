#include "kernels/cpu/cpu_sparse.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_dot.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/cpu_softmax.h"

namespace dynsparse::cpu {
namespace {

// Dot of weight row `row` of w [rows, in] (columns [col, col + n)) with x.
float DotRow(const Tensor& w, int64_t row, int64_t col, const float* x,
             int64_t n) {
  const int64_t offset = row * w.dim(1) + col;
  switch (w.dtype()) {
    case DType::kF32:
      return Dot(w.data<float>() + offset, x, n);
    case DType::kBF16:
      return Dot(w.data<uint16_t>() + offset, x, n, std::true_type{});
    case DType::kF16:
      return Dot(w.data<uint16_t>() + offset, x, n, std::false_type{});
    case DType::kI32:
      break;
  }
  DS_CHECK(false) << "integer weights";
  return 0.0f;
}

// y[0, n) += a * w[0, n), widening 16-bit weights in registers (the same
// Load8 as the dense GEMV) where AVX2/F16C exist.
template <typename W, typename... Tag>
void Axpy(const W* w, float a, float* y, int64_t n, Tag... tag) {
  int64_t i = 0;
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  const __m256 va = _mm256_set1_ps(a);
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, Load8(w + i, tag...),
                                            _mm256_loadu_ps(y + i)));
  }
#endif
  for (; i < n; ++i) y[i] += a * ElementToF32(w[i], tag...);
}

void AxpyRow(const Tensor& w, int64_t row, int64_t col, float a, float* y,
             int64_t n) {
  const int64_t offset = row * w.dim(1) + col;
  switch (w.dtype()) {
    case DType::kF32:
      return Axpy(w.data<float>() + offset, a, y, n);
    case DType::kBF16:
      return Axpy(w.data<uint16_t>() + offset, a, y, n, std::true_type{});
    case DType::kF16:
      return Axpy(w.data<uint16_t>() + offset, a, y, n, std::false_type{});
    case DType::kI32:
      break;
  }
  DS_CHECK(false) << "integer weights";
}

float BiasAt(const Tensor& bias, int64_t i) {
  if (bias.empty()) return 0.0f;
  float v;
  ConvertElements(
      bias.dtype(),
      static_cast<const char*>(bias.raw_data()) + i * DTypeSize(bias.dtype()),
      DType::kF32, &v, 1);
  return v;
}

void CheckIds(const Tensor& ids, int64_t rows, int64_t units) {
  DS_CHECK(ids.dtype() == DType::kI32 && ids.rank() == 2 && ids.dim(0) == rows)
      << "ids " << ShapeToString(ids.shape()) << " for " << rows << " rows";
  const int32_t* p = ids.data<int32_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    DS_CHECK(p[i] >= 0 && p[i] < units) << "unit " << p[i] << " of " << units;
  }
}

using RowMatrix =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstStridedMap = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;

}  // namespace

void GatherLinear(const Tensor& x, const Tensor& w, const Tensor& bias,
                  const Tensor& ids, int64_t unit_width, Tensor* y) {
  const int64_t rows = x.dim(0), in = x.dim(1), k = ids.dim(1);
  DS_CHECK_EQ(w.dim(1), in);
  CheckIds(ids, rows, w.dim(0) / unit_width);
  DS_CHECK(y->dim(0) == rows && y->dim(1) == k * unit_width);
  const int64_t cols = k * unit_width;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t row =
          ids.data<int32_t>()[r * k + c / unit_width] * unit_width +
          c % unit_width;
      // Dot then bias, as the dense Linear adds its bias after the GEMV.
      y->data<float>()[r * cols + c] =
          DotRow(w, row, 0, x.data<float>() + r * in, in) + BiasAt(bias, row);
    }
  }
}

void GatherLinearT(const Tensor& x, const Tensor& w_t, const Tensor& bias,
                   const Tensor& ids, Tensor* y) {
  const int64_t rows = x.dim(0), out = w_t.dim(1);
  const int64_t k = ids.empty() ? w_t.dim(0) : ids.dim(1);
  DS_CHECK_EQ(x.dim(1), k);
  if (!ids.empty()) CheckIds(ids, rows, w_t.dim(0));
  DS_CHECK(y->dim(0) == rows && y->dim(1) == out);
  // Split over the kept rows (each thread streams whole rows of w_t, each
  // read once) into per-thread partial sums, then one reduction.
  const int threads = std::max(1, std::min<int>(Threads(), k / 16 + 1));
  std::vector<float> partial(static_cast<size_t>(threads) * out);
  for (int64_t r = 0; r < rows; ++r) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      float* acc = partial.data() + static_cast<size_t>(t) * out;
      std::fill(acc, acc + out, 0.0f);
      const int64_t j0 = k * t / threads, j1 = k * (t + 1) / threads;
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t unit = ids.empty() ? j : ids.data<int32_t>()[r * k + j];
        AxpyRow(w_t, unit, 0, x.data<float>()[r * k + j], acc, out);
      }
    }
    float* yr = y->data<float>() + r * out;
    for (int64_t i = 0; i < out; ++i) {
      float sum = 0.0f;
      for (int t = 0; t < threads; ++t) sum += partial[t * out + i];
      yr[i] = sum + BiasAt(bias, i);
    }
  }
}

void GatherColumnsLinear(const Tensor& x, const Tensor& w, const Tensor& bias,
                         const Tensor& ids, int64_t unit_width, Tensor* y) {
  const int64_t rows = x.dim(0), out = w.dim(0), k = ids.dim(1);
  CheckIds(ids, rows, w.dim(1) / unit_width);
  DS_CHECK_EQ(x.dim(1), k * unit_width);
  DS_CHECK(y->dim(0) == rows && y->dim(1) == out);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      float sum = 0.0f;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t unit = ids.data<int32_t>()[r * k + j];
        sum += DotRow(w, o, unit * unit_width,
                      x.data<float>() + (r * k + j) * unit_width, unit_width);
      }
      y->data<float>()[r * out + o] = sum + BiasAt(bias, o);
    }
  }
}

void GatherColumns(const Tensor& x, const Tensor& ids, int64_t unit_width,
                   Tensor* y) {
  const int64_t rows = x.dim(0), width = x.dim(1), k = ids.dim(1);
  CheckIds(ids, rows, width / unit_width);
  DS_CHECK(y->dim(0) == rows && y->dim(1) == k * unit_width);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t unit = ids.data<int32_t>()[r * k + j];
      std::copy_n(x.data<float>() + r * width + unit * unit_width, unit_width,
                  y->data<float>() + (r * k + j) * unit_width);
    }
  }
}

// The same arithmetic as cpu::Attention for one query row and one head, so
// a kept head's context equals the dense one.
void SparseAttention(const AttentionArgs& a, const Tensor& head_ids) {
  const int64_t n = a.q->dim(0), hd = a.head_dim, k = head_ids.dim(1);
  const int64_t group = a.num_heads / a.num_kv_heads;
  const int64_t kv_stride = a.num_kv_heads * hd;
  CheckIds(head_ids, n, a.num_heads);
  DS_CHECK(a.q->dim(1) == k * hd && a.out->dim(1) == k * hd);
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t head = head_ids.data<int32_t>()[r * k + j];
      const int64_t kv_head = head / group;
      const int64_t keys =
          std::min<int64_t>(a.num_keys, a.query_positions[r] + 1);
      ConstStridedMap q(a.q->data<float>() + (r * k + j) * hd, 1, hd,
                        Eigen::OuterStride<>(k * hd));
      ConstStridedMap kc(a.k_cache->data<float>() + kv_head * hd, keys, hd,
                         Eigen::OuterStride<>(kv_stride));
      ConstStridedMap vc(a.v_cache->data<float>() + kv_head * hd, keys, hd,
                         Eigen::OuterStride<>(kv_stride));
      RowMatrix scores = (q * kc.transpose()) * a.scale;
      SoftmaxInPlace(scores.data(), keys);
      Eigen::Map<RowMatrix> out(a.out->data<float>() + (r * k + j) * hd, 1, hd);
      out.noalias() = scores * vc;
    }
  }
}

void LazyKv(const LazyKvArgs& a) {
  const int64_t hidden = a.ring_x->dim(1), slots = a.ring_x->dim(0);
  const int64_t hd = a.head_dim, kv = a.num_kv_heads;
  const int64_t group = a.num_heads / kv;
  const int32_t pos = a.step[0], slot = a.step[1];
  const bool flush = a.step[2] != 0;
  int32_t* pending = a.ring_pending->data<int32_t>();
  int32_t* ring_pos = a.ring_pos->data<int32_t>();
  std::vector<char> active(kv, flush ? 1 : 0);
  if (!flush) {
    DS_CHECK(a.head_ids != nullptr);
    CheckIds(*a.head_ids, 1, a.num_heads);
    for (int64_t j = 0; j < a.head_ids->numel(); ++j) {
      active[a.head_ids->data<int32_t>()[j] / group] = 1;
    }
    // A head that still owes the K/V of the token whose slot the next token
    // will take completes now: it then owes at most slots - 1 old tokens
    // plus this one, one tensor-core pass on CUDA (a 17th token took a
    // second pass over the head's weights). The slot this token takes is
    // then never owed while positions come in order; a head owing it
    // anyway completes now too, before that input is overwritten.
    const int64_t next = (slot + 1) % slots;
    for (int64_t g = 0; a.h != nullptr && g < kv; ++g) {
      if (pending[slot * kv + g] || pending[next * kv + g]) active[g] = 1;
    }
  }
  // Work items: (kv head, input row, position) for every missing K/V.
  struct Item {
    int64_t head;
    const float* x;
    int32_t pos;
  };
  std::vector<Item> items;
  for (int64_t g = 0; g < kv; ++g) {
    if (!active[g]) continue;
    for (int64_t s = 0; s < slots; ++s) {
      if (pending[s * kv + g]) {
        items.push_back({g, a.ring_x->data<float>() + s * hidden, ring_pos[s]});
      }
    }
    if (a.h != nullptr) items.push_back({g, a.h->data<float>(), pos});
  }
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t t = 0; t < items.size(); ++t) {
    const Item& it = items[t];
    Tensor k = Tensor::Zeros(DType::kF32, {1, hd});
    for (int64_t i = 0; i < hd; ++i) {
      const int64_t row = it.head * hd + i;
      k.data<float>()[i] = DotRow(*a.wk, row, 0, it.x, hidden) +
                           (a.bk ? BiasAt(*a.bk, row) : 0.0f);
      a.v_cache->data<float>()[it.pos * kv * hd + row] =
          DotRow(*a.wv, row, 0, it.x, hidden) +
          (a.bv ? BiasAt(*a.bv, row) : 0.0f);
    }
    if (a.rope != nullptr && a.rope->enabled()) {
      const int32_t p[] = {it.pos};
      ApplyRope(*a.rope, p, 1, &k);
    }
    std::copy_n(k.data<float>(), hd,
                a.k_cache->data<float>() + it.pos * kv * hd + it.head * hd);
  }
  for (int64_t g = 0; g < kv; ++g) {
    if (!active[g]) continue;
    for (int64_t s = 0; s < slots; ++s) pending[s * kv + g] = 0;
  }
  if (a.h != nullptr) {
    std::copy_n(a.h->data<float>(), hidden,
                a.ring_x->data<float>() + slot * hidden);
    ring_pos[slot] = pos;
    for (int64_t g = 0; g < kv; ++g) pending[slot * kv + g] = active[g] ? 0 : 1;
  }
}

}  // namespace dynsparse::cpu
