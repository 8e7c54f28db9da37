// InterleavedToHalfRotary must make HF-style RoPE on the permuted weights
// give the same attention scores as interleaved RoPE on the originals.
#include "core/io/rope_permute.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace dynsparse {
namespace {

using Vec = std::vector<double>;

Vec Project(const Tensor& w, const Vec& x) {
  Vec y(w.dim(0), 0.0);
  const float* p = w.data<float>();
  for (int64_t r = 0; r < w.dim(0); ++r) {
    for (int64_t c = 0; c < w.dim(1); ++c) y[r] += p[r * w.dim(1) + c] * x[c];
  }
  return y;
}

double Angle(int pos, int64_t pair, int64_t head_dim) {
  return pos * std::pow(10000.0, -2.0 * pair / head_dim);
}

// llama2.c: rotate (v[2i], v[2i+1]) by the angle of pair i.
void RopeInterleaved(Vec& v, int64_t head_dim, int pos) {
  for (size_t base = 0; base < v.size(); base += head_dim) {
    for (int64_t i = 0; i < head_dim / 2; ++i) {
      const double a = v[base + 2 * i], b = v[base + 2 * i + 1];
      const double t = Angle(pos, i, head_dim);
      v[base + 2 * i] = a * std::cos(t) - b * std::sin(t);
      v[base + 2 * i + 1] = a * std::sin(t) + b * std::cos(t);
    }
  }
}

// HF rotate_half: rotate (v[i], v[i + d/2]) by the angle of pair i.
void RopeHalf(Vec& v, int64_t head_dim, int pos) {
  const int64_t half = head_dim / 2;
  for (size_t base = 0; base < v.size(); base += head_dim) {
    for (int64_t i = 0; i < half; ++i) {
      const double a = v[base + i], b = v[base + i + half];
      const double t = Angle(pos, i, head_dim);
      v[base + i] = a * std::cos(t) - b * std::sin(t);
      v[base + i + half] = a * std::sin(t) + b * std::cos(t);
    }
  }
}

double HeadDot(const Vec& q, const Vec& k, int64_t head, int64_t head_dim) {
  double dot = 0;
  for (int64_t i = 0; i < head_dim; ++i) {
    dot += q[head * head_dim + i] * k[head * head_dim + i];
  }
  return dot;
}

TEST(RopePermuteTest, AttentionScoresMatchAcrossConventions) {
  constexpr int64_t kHeads = 3, kHeadDim = 8, kIn = 5;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> wq(kHeads * kHeadDim * kIn), wk(wq.size());
  for (float& v : wq) v = normal(rng);
  for (float& v : wk) v = normal(rng);
  const Tensor q_orig = Tensor::FromF32(wq, {kHeads * kHeadDim, kIn});
  const Tensor k_orig = Tensor::FromF32(wk, {kHeads * kHeadDim, kIn});
  const Tensor q_hf = InterleavedToHalfRotary(q_orig, kHeads);
  const Tensor k_hf = InterleavedToHalfRotary(k_orig, kHeads);
  Vec x(kIn), y(kIn);
  for (double& v : x) v = normal(rng);
  for (double& v : y) v = normal(rng);

  for (int q_pos : {0, 3, 17}) {
    for (int k_pos : {0, 2, 17}) {
      Vec qa = Project(q_orig, x), ka = Project(k_orig, y);
      RopeInterleaved(qa, kHeadDim, q_pos);
      RopeInterleaved(ka, kHeadDim, k_pos);
      Vec qb = Project(q_hf, x), kb = Project(k_hf, y);
      RopeHalf(qb, kHeadDim, q_pos);
      RopeHalf(kb, kHeadDim, k_pos);
      for (int64_t h = 0; h < kHeads; ++h) {
        EXPECT_NEAR(HeadDot(qa, ka, h, kHeadDim), HeadDot(qb, kb, h, kHeadDim),
                    1e-9)
            << "head " << h << " positions " << q_pos << "," << k_pos;
      }
    }
  }
}

TEST(RopePermuteTest, MovesRowsWithinEachHead) {
  // Four rows per head, one column holding the row index.
  const Tensor w = Tensor::FromF32({0, 1, 2, 3, 4, 5, 6, 7}, {8, 1});
  EXPECT_EQ(InterleavedToHalfRotary(w, 2).ToF32Vector(),
            (std::vector<float>{0, 2, 1, 3, 4, 6, 5, 7}));
  const Tensor bf16 = w.ConvertTo(DType::kBF16);
  const Tensor out = InterleavedToHalfRotary(bf16, 1);
  EXPECT_EQ(out.dtype(), DType::kBF16);
  EXPECT_EQ(out.ToF32Vector(), (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
}

}  // namespace
}  // namespace dynsparse
