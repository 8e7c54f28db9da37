// Attention over a long f32 or f16 KV cache on the Llama-2-7B shape (32
// heads of 128): the one-row split-K decode kernel, and few query rows (a
// LazyLLM decode step's revived rows) on the two split tensor-core kernels, the
// staged one and the cp.async ring (pipelined_attention.h). The rows sit at
// the last positions, so each reads every listed key: bytes per call are the
// listed keys' K and V rows of every head (in the cache's element type),
// plus q and out (f32). "spread" cases place the rows evenly over the cache
// instead, as a step's revived rows are (causal skipping then saves work;
// the bytes are still counted as if every row read every key). The key list
// is every cache row (keys=cached) or every 4th (about what keys=selected
// keeps); "none" runs without a list, as dense decode does.
//
//   dynsparse_cuda_benchmarks --benchmark_filter=attention
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_benchmark.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/pipelined_attention.h"
#include "kernels/cuda/pipelined_split_plan.h"

namespace dynsparse::cuda {
namespace {

constexpr int64_t kHeads = 32;
constexpr int64_t kHeadDim = 128;

enum class AttentionKernel { kDecode, kStaged, kPipelined };

struct AttentionCase {
  int64_t rows;
  int64_t cache_rows;
  int64_t list_every;  // 0: no key list; k: cache rows 0, k, 2k, ... listed
  AttentionKernel kernel;
  DType cache = DType::kF32;
  bool spread = false;  // rows evenly over the cache, not at its end
};

const char* KernelName(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::kDecode:
      return "decode";
    case AttentionKernel::kStaged:
      return "staged";
    case AttentionKernel::kPipelined:
      return "pipelined";
  }
  return "?";
}

void BenchAttention(benchmark::State& state, bench::Env* env, AttentionCase c) {
  DeviceContext& ctx = *env->ctx;
  const int64_t width = kHeads * kHeadDim;
  std::vector<int32_t> listed;
  for (int64_t r = 0; c.list_every > 0 && r < c.cache_rows; r += c.list_every) {
    listed.push_back(static_cast<int32_t>(r));
  }
  const int64_t keys =
      c.list_every > 0 ? static_cast<int64_t>(listed.size()) : c.cache_rows;
  std::vector<int32_t> positions(c.rows);
  std::iota(positions.begin(), positions.end(),
            static_cast<int32_t>(c.cache_rows - c.rows));
  if (c.spread) {
    for (int64_t i = 0; i < c.rows; ++i) {
      positions[i] = static_cast<int32_t>((i + 1) * c.cache_rows / c.rows - 1);
    }
  }

  const double element = static_cast<double>(DTypeSize(c.cache));
  const double kv_bytes =
      2.0 * element * static_cast<double>(c.cache_rows) * width;
  const int buffers = bench::BuffersFor(ctx, kv_bytes);
  std::vector<Tensor> k_caches, v_caches;
  absl::Status ok = absl::OkStatus();
  const auto allocate = [&](DType dtype, Shape shape) {
    absl::StatusOr<Tensor> t = AllocateDevice(ctx, dtype, std::move(shape));
    ok.Update(t.status());
    return t.ok() ? *t : Tensor();
  };
  for (int i = 0; i < buffers && ok.ok(); ++i) {
    k_caches.push_back(allocate(c.cache, {c.cache_rows, width}));
    v_caches.push_back(allocate(c.cache, {c.cache_rows, width}));
    if (ok.ok()) ok.Update(bench::FillRandom(ctx, &k_caches.back(), 10 + i, 1));
    if (ok.ok()) ok.Update(bench::FillRandom(ctx, &v_caches.back(), 50 + i, 1));
  }
  Tensor q = ok.ok() ? allocate(DType::kF32, {c.rows, width}) : Tensor();
  Tensor out = ok.ok() ? allocate(DType::kF32, {c.rows, width}) : Tensor();
  if (ok.ok()) ok.Update(bench::FillRandom(ctx, &q, 7, 1));
  Tensor dpos, dlist;
  if (ok.ok()) {
    absl::StatusOr<Tensor> t =
        ToDevice(ctx, Tensor::FromI32(positions, {c.rows}));
    ok.Update(t.status());
    if (t.ok()) dpos = *t;
  }
  if (ok.ok() && !listed.empty()) {
    absl::StatusOr<Tensor> t = ToDevice(ctx, Tensor::FromI32(listed, {keys}));
    ok.Update(t.status());
    if (t.ok()) dlist = *t;
  }
  if (!ok.ok()) {
    state.SkipWithError(std::string(ok.message()).c_str());
    return;
  }

  DeviceAttentionArgs args;
  args.q = &q;
  args.positions = dpos.data<int32_t>();
  args.key_rows = listed.empty() ? nullptr : dlist.data<int32_t>();
  args.num_keys = listed.empty() ? 0 : keys;
  args.num_heads = kHeads;
  args.num_kv_heads = kHeads;
  args.head_dim = kHeadDim;
  args.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  args.out = &out;
  Tensor scratch, counters;
  if (c.kernel == AttentionKernel::kDecode) {
    args.k_cache = &k_caches[0];
    args.v_cache = &v_caches[0];
    scratch = allocate(DType::kF32, {DecodeAttentionScratchFloats(args)});
    counters = allocate(DType::kI32, {DecodeAttentionCounters(args)});
    if (ok.ok()) ok.Update(FillBytes(ctx, 0, &counters));
    if (ok.ok()) args.counters = counters.data<int32_t>();
  } else {
    // The splits CudaBackend::Attention picks for each kernel.
    args.tensor_cores = true;
    args.pipelined_splits = c.kernel == AttentionKernel::kPipelined;
    args.key_splits =
        args.pipelined_splits
            ? PipelinedSplitCount(PipelinedTileKeys(positions, listed, keys),
                                  kHeads, keys, ctx.sm_count())
            : PrefillKeySplits(c.rows, kHeads, keys, ctx.sm_count());
    scratch = allocate(DType::kF32,
                       {std::max<int64_t>(1, PrefillSplitScratchFloats(args))});
    if (ok.ok()) args.split_scratch = scratch.data<float>();
    state.counters["splits"] = static_cast<double>(args.key_splits);
  }
  if (!ok.ok()) {
    state.SkipWithError(std::string(ok.message()).c_str());
    return;
  }
  state.counters["buffers"] = buffers;
  const double bytes = 2.0 * element * static_cast<double>(keys) * width +
                       2.0 * 4.0 * static_cast<double>(c.rows) * width;
  bench::TimeGraph(
      state, ctx, bench::CallsFor(buffers),
      [&](int i) -> absl::Status {
        DeviceAttentionArgs call = args;
        call.k_cache = &k_caches[i % buffers];
        call.v_cache = &v_caches[i % buffers];
        return c.kernel == AttentionKernel::kDecode
                   ? DecodeAttention(ctx, call, scratch.data<float>())
                   : PrefillAttention(ctx, call, keys);
      },
      bytes, env->copy_gbps);
}

}  // namespace

void RegisterAttentionBenchmarks(bench::Env* env) {
  const auto add = [&](AttentionCase c) {
    const std::string list =
        c.list_every == 0 ? "none" : absl::StrFormat("every%d", c.list_every);
    const std::string name = absl::StrFormat(
        "attention/%s/rows%d%s/cache%d/%s/%s", KernelName(c.kernel), c.rows,
        c.spread ? "spread" : "", c.cache_rows, list, DTypeName(c.cache));
    benchmark::RegisterBenchmark(name.c_str(), BenchAttention, env, c)
        ->UseManualTime()
        ->Iterations(bench::kIterations)
        ->Unit(benchmark::kMicrosecond);
  };
  // One dense decode row (no list) on both kernels, for the key count from
  // which CudaBackend takes the pipelined one
  // (tensor_core_decode_attention_keys). The decode kernel's cases at 4096
  // and 16384 keys are registered with the others below.
  for (int64_t cache : {1024, 2048, 4096, 8192, 16384}) {
    add({1, cache, 0, AttentionKernel::kPipelined, DType::kF16});
    const bool registered_below = cache == 4096 || cache == 16384;
    if (!registered_below) {
      add({1, cache, 0, AttentionKernel::kDecode, DType::kF16});
    }
  }
  for (int64_t cache : {4096, 16384}) {
    for (DType dtype : {DType::kF32, DType::kF16}) {
      add({1, cache, 0, AttentionKernel::kDecode, dtype});
      add({1, cache, 1, AttentionKernel::kDecode, dtype});
    }
    // A decode step's new row with 0-7 revived ones on the pipelined kernel
    // (CudaBackend routes them there from tensor_core_keyed_attention_rows)
    // and on the decode kernel, which gives each row its own blocks.
    for (int64_t rows : {1, 2, 4, 8}) {
      add({rows, cache, 1, AttentionKernel::kPipelined, DType::kF16});
      if (rows > 1)
        add({rows, cache, 1, AttentionKernel::kDecode, DType::kF16});
    }
    // Revived rows: 9-64 in most layers that have any, 65-255 in a few.
    for (int64_t rows : {16, 32, 64, 128, 200}) {
      for (int64_t every : {1, 4}) {
        if (every == 4 && rows > 64) continue;
        add({rows, cache, every, AttentionKernel::kStaged});
        add({rows, cache, every, AttentionKernel::kPipelined});
        add({rows, cache, every, AttentionKernel::kPipelined, DType::kF16});
      }
      add({rows, cache, 1, AttentionKernel::kPipelined, DType::kF16, true});
    }
  }
}

}  // namespace dynsparse::cuda
