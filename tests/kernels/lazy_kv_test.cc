// The CPU lazy K/V ring (cpu::LazyKv, the reference the CUDA kernels are
// tested against): every (token, kv head) K/V is computed exactly once, equals
// the direct projection, is complete at the latest one ring length after its
// token, and is complete whenever its head is active, also for a head that is
// rarely kept (its K/V are completed as the ring wraps, not by a flush).
#include <cmath>
#include <random>
#include <vector>

#include "core/graph/backend.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_sparse.h"

namespace dynsparse {
namespace {

Tensor RandomTensor(Shape shape, std::mt19937& rng) {
  std::normal_distribution<float> dist;
  std::vector<float> v(NumElements(shape));
  for (float& x : v) x = dist(rng);
  return Tensor::FromF32(v, std::move(shape));
}

TEST(LazyKvTest, EachTokenHeadComputedOnceAndInTime) {
  const int64_t hidden = 24, heads = 4, kv = 2, hd = 4, slots = 16;
  const int32_t first = 3, last = 3 + 5 * static_cast<int32_t>(slots);
  const int64_t width = kv * hd, group = heads / kv;
  std::mt19937 rng(5);
  const Tensor wk = RandomTensor({width, hidden}, rng);
  const Tensor wv = RandomTensor({width, hidden}, rng);
  Tensor ring_x = Tensor::Zeros(DType::kF32, {slots, hidden});
  Tensor ring_pos = Tensor::Zeros(DType::kI32, {slots});
  Tensor pending = Tensor::Zeros(DType::kI32, {slots, kv});
  const int64_t capacity = last + 1;
  std::vector<float> nan(capacity * width, NAN);
  Tensor kc = Tensor::FromF32(nan, {capacity, width});
  Tensor vc = Tensor::FromF32(nan, {capacity, width});
  // A verified row is overwritten with kDone: computing it again would
  // overwrite the marker.
  constexpr float kDone = 1e30f;
  std::vector<std::vector<float>> ref_k(capacity), ref_v(capacity);
  std::vector<std::vector<char>> done(capacity, std::vector<char>(kv, 0));

  auto run = [&](const Tensor* h, const Tensor* ids,
                 absl::Span<const int32_t> step) {
    LazyKvArgs a;
    a.h = h;
    a.head_ids = ids;
    a.step = step;
    a.ring_x = &ring_x;
    a.ring_pos = &ring_pos;
    a.ring_pending = &pending;
    a.wk = &wk;
    a.wv = &wv;
    a.num_heads = heads;
    a.num_kv_heads = kv;
    a.head_dim = hd;
    a.k_cache = &kc;
    a.v_cache = &vc;
    cpu::LazyKv(a);
  };
  // Checks every row so far after a step at position `now`; kv head
  // `active` (-1: none) must see complete rows.
  auto check = [&](int32_t now, int64_t active) {
    for (int32_t p = first; p <= now; ++p) {
      for (int64_t g = 0; g < kv; ++g) {
        float* k = kc.data<float>() + p * width + g * hd;
        float* v = vc.data<float>() + p * width + g * hd;
        for (int64_t i = 0; i < hd; ++i) {
          if (done[p][g]) {
            ASSERT_EQ(k[i], kDone) << "K/V of " << p << ", head " << g
                                   << " computed again at " << now;
            ASSERT_EQ(v[i], kDone);
          } else if (!std::isnan(k[i])) {
            ASSERT_NEAR(k[i], ref_k[p][g * hd + i], 1e-4) << p << " " << g;
            ASSERT_NEAR(v[i], ref_v[p][g * hd + i], 1e-4) << p << " " << g;
          }
        }
        if (!std::isnan(k[0]) && !done[p][g]) {
          std::fill_n(k, hd, kDone);
          std::fill_n(v, hd, kDone);
          done[p][g] = 1;
        }
        if (now - p >= slots - 1 || g == active) {
          ASSERT_TRUE(done[p][g])
              << "K/V of " << p << ", head " << g << " missing at " << now;
        }
      }
    }
  };

  for (int32_t p = first; p < last; ++p) {
    const Tensor h = RandomTensor({1, hidden}, rng);
    ref_k[p].assign(width, 0.f);
    ref_v[p].assign(width, 0.f);
    for (int64_t r = 0; r < width; ++r) {
      for (int64_t i = 0; i < hidden; ++i) {
        ref_k[p][r] += wk.data<float>()[r * hidden + i] * h.data<float>()[i];
        ref_v[p][r] += wv.data<float>()[r * hidden + i] * h.data<float>()[i];
      }
    }
    // Kv head 0 most steps; head 1 only every 23rd, so it is forced.
    const int32_t head = p % 23 == 0
                             ? static_cast<int32_t>(group + rng() % group)
                             : static_cast<int32_t>(rng() % group);
    const Tensor ids = Tensor::FromI32({head}, {1, 1});
    const int32_t step[] = {p, static_cast<int32_t>(p % slots), 0};
    run(&h, &ids, step);
    check(p, head / group);
  }
  // A flush completes the rest.
  const int32_t flush[] = {0, 0, 1};
  run(nullptr, nullptr, flush);
  check(last - 1, -1);
  for (int32_t p = first; p < last; ++p) {
    for (int64_t g = 0; g < kv; ++g) EXPECT_TRUE(done[p][g]) << p << " " << g;
  }
}

}  // namespace
}  // namespace dynsparse
