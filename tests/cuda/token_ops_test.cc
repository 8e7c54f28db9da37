// LazyLLM's token ops on CUDA against the kernels/cpu references: attention
// over a key list (flash prefill, tensor-core prefill, split-K decode), the
// last-query probe, row copies, and a whole pruned Session (prefill +
// decode with revival) on CudaBackend vs CpuBackend.
#include "kernels/cuda/token_ops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/session.h"
#include "core/io/model_loader.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/pipelined_split_plan.h"
#include "tests/cuda/attention_test_util.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/test_paths.h"

namespace dynsparse::cuda {
namespace {

struct KeyedCase {
  int64_t capacity;  // cache rows; the live keys are a random subset
  int64_t live;      // keys listed
  int64_t rows;      // query rows: the last `rows` live keys
  int64_t heads;
  int64_t kv_heads;
  int64_t head_dim;
};

// Each case on an f32 and an f16 KV cache; the CPU reference reads the f16
// cache's values as f32, so the tolerances hold for both.
class KeyedAttentionTest
    : public testutil::CudaTest,
      public ::testing::WithParamInterface<std::tuple<KeyedCase, DType>> {};

TEST_P(KeyedAttentionTest, MatchesCpuReference) {
  const KeyedCase c = std::get<0>(GetParam());
  const DType kv_dtype = std::get<1>(GetParam());
  std::vector<int32_t> all(c.capacity);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end() - 1, rng_);
  std::vector<int32_t> keys(all.begin(), all.begin() + c.live - 1);
  keys.push_back(static_cast<int32_t>(c.capacity - 1));  // the last token
  std::sort(keys.begin(), keys.end());
  // Queries: a spread of live tokens, always including the last.
  std::vector<int32_t> qpos;
  for (int64_t i = 0; i < c.rows; ++i) {
    qpos.push_back(keys[c.live - 1 - (c.rows - 1 - i) * (c.live / c.rows)]);
  }
  const Tensor q = RandomHost({c.rows, c.heads * c.head_dim});
  const Tensor k = RandomHost({c.capacity, c.kv_heads * c.head_dim}, kv_dtype);
  const Tensor v = RandomHost({c.capacity, c.kv_heads * c.head_dim}, kv_dtype);

  const Tensor ref = testutil::CpuAttention(
      q, k.ConvertTo(DType::kF32), v.ConvertTo(DType::kF32), c.live, qpos, keys,
      c.heads, c.kv_heads, c.head_dim);

  const Tensor dq = Upload(q), dk = Upload(k), dv = Upload(v);
  const Tensor dpos = Upload(Tensor::FromI32(qpos, {c.rows}));
  const Tensor dkeys = Upload(Tensor::FromI32(keys, {c.live}));
  DeviceAttentionArgs args =
      testutil::DeviceArgs(dq, dk, dv, dpos, c.heads, c.kv_heads, c.head_dim);
  args.key_rows = dkeys.data<int32_t>();
  args.num_keys = c.live;

  Tensor out = PoisonedDevice(DType::kF32, ref.shape());
  args.out = &out;
  ASSERT_TRUE(PrefillAttention(ctx(), args, c.live).ok());
  EXPECT_LT(testutil::RelativeError(Download(out), ref.ToF32Vector()), 1e-5)
      << SeedMessage();

  if (c.head_dim == 64 || c.head_dim == 128) {
    Tensor tc_out = PoisonedDevice(DType::kF32, ref.shape());
    args.out = &tc_out;
    args.tensor_cores = true;
    ASSERT_TRUE(PrefillAttention(ctx(), args, c.live).ok());
    EXPECT_LT(testutil::RelativeError(Download(tc_out), ref.ToF32Vector()),
              3e-3)
        << SeedMessage();
    args.tensor_cores = false;
  }

  // From here on, cache rows not listed hold NaN and must not be read.
  std::vector<float> k_live = k.ToF32Vector(), v_live = v.ToF32Vector();
  std::vector<bool> listed(c.capacity, false);
  for (int32_t key : keys) listed[key] = true;
  const int64_t width = c.kv_heads * c.head_dim;
  for (int64_t r = 0; r < c.capacity; ++r) {
    if (listed[r]) continue;
    std::fill_n(k_live.begin() + r * width, width, NAN);
    std::fill_n(v_live.begin() + r * width, width, NAN);
  }
  const Tensor dk_live = Upload(Tensor::FromF32(k_live, k.shape(), kv_dtype));
  const Tensor dv_live = Upload(Tensor::FromF32(v_live, v.shape(), kv_dtype));

  // Keys split over blocks (attention.h key_splits), on every kernel: the
  // same result up to summation order; rows before a split see none of it.
  args.k_cache = &dk_live;
  args.v_cache = &dv_live;
  args.key_splits = 4;
  Tensor split_scratch =
      PoisonedDevice(DType::kF32, {PrefillSplitScratchFloats(args)});
  args.split_scratch = split_scratch.data<float>();
  // Tensor cores: the staged kernel, then the cp.async ring
  // (pipelined_attention.h).
  for (int kernel : {0, 1, 2}) {
    const bool tensor_cores = kernel > 0;
    if (tensor_cores && c.head_dim != 64 && c.head_dim != 128) continue;
    Tensor split_out = PoisonedDevice(DType::kF32, ref.shape());
    args.out = &split_out;
    args.tensor_cores = tensor_cores;
    args.pipelined_splits = kernel == 2;
    ASSERT_TRUE(PrefillAttention(ctx(), args, c.live).ok());
    EXPECT_LT(testutil::RelativeError(Download(split_out), ref.ToF32Vector()),
              tensor_cores ? 3e-3 : 1e-5)
        << "split keys, kernel " << kernel << " " << SeedMessage();
  }
  // The cp.async ring at the splits CudaBackend plans for these rows
  // (pipelined_split_plan.h): blocks past a tile's last row exit at once.
  if (c.head_dim == 64 || c.head_dim == 128) {
    args.key_splits = PipelinedSplitCount(PipelinedTileKeys(qpos, keys, c.live),
                                          c.heads, c.live, ctx().sm_count());
    Tensor planned_scratch = PoisonedDevice(
        DType::kF32, {std::max<int64_t>(1, PrefillSplitScratchFloats(args))});
    args.split_scratch = planned_scratch.data<float>();
    Tensor planned_out = PoisonedDevice(DType::kF32, ref.shape());
    args.out = &planned_out;
    args.tensor_cores = true;
    args.pipelined_splits = true;
    ASSERT_TRUE(PrefillAttention(ctx(), args, c.live).ok());
    EXPECT_LT(testutil::RelativeError(Download(planned_out), ref.ToF32Vector()),
              3e-3)
        << args.key_splits << " planned splits " << SeedMessage();
  }
  args.tensor_cores = false;
  args.pipelined_splits = false;
  args.key_splits = 1;
  args.split_scratch = nullptr;

  if (c.rows <= 8) {
    // Split-K decode, its grid sized by the listed keys, with the in-kernel
    // merge (counters) too.
    args.k_cache = &dk_live;
    args.v_cache = &dv_live;
    Tensor scratch =
        PoisonedDevice(DType::kF32, {DecodeAttentionScratchFloats(args)});
    absl::StatusOr<Tensor> counters =
        AllocateDevice(ctx(), DType::kI32, {DecodeAttentionCounters(args)});
    ASSERT_TRUE(counters.ok()) << counters.status();
    ASSERT_TRUE(FillBytes(ctx(), 0, &*counters).ok());
    for (bool merge_in_kernel : {false, true, true}) {
      Tensor dec_out = PoisonedDevice(DType::kF32, ref.shape());
      args.out = &dec_out;
      args.counters = merge_in_kernel ? counters->data<int32_t>() : nullptr;
      ASSERT_TRUE(DecodeAttention(ctx(), args, scratch.data<float>()).ok());
      EXPECT_LT(testutil::RelativeError(Download(dec_out), ref.ToF32Vector()),
                1e-5)
          << "merge in kernel " << merge_in_kernel << " " << SeedMessage();
    }
    absl::StatusOr<Tensor> host = ToHost(ctx(), *counters);
    ASSERT_TRUE(host.ok());
    const int32_t* ints = host->data<int32_t>();
    EXPECT_EQ(std::count(ints, ints + host->numel(), 0), host->numel());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, KeyedAttentionTest,
    ::testing::Combine(
        ::testing::Values(KeyedCase{300, 200, 1, 32, 32, 128},  // decode, MHA
                          KeyedCase{4500, 700, 7, 8, 2, 128},   // revival step
                          KeyedCase{500, 137, 4, 8, 2, 64},     // few rows, GQA
                          KeyedCase{700, 400, 130, 8, 2, 128},  // prefill tail
                          KeyedCase{260, 100, 100, 4, 1,
                                    64},  // every key a row
                          KeyedCase{2000, 900, 24, 4, 4, 128},  // 17-32 rows
                          KeyedCase{90, 50, 20, 3, 3, 40}),     // odd head dim
        ::testing::Values(DType::kF32, DType::kF16)));

class TokenOpsTest : public testutil::CudaTest {
 protected:
  void CheckLastQueryProbe(DType cache, int64_t heads, int64_t kv_heads,
                           int64_t hd, int64_t capacity);
};

// On an f32 and an f16 key cache (the reference reads the f16 cache's keys
// as f32); head dims that take 16-byte runs (128, 64, 40) and one that
// does not (42), key counts off the probe's 64-key blocks.
TEST_F(TokenOpsTest, LastQueryProbeMatchesCpu) {
  for (DType cache : {DType::kF32, DType::kF16}) {
    SCOPED_TRACE(DTypeName(cache));
    CheckLastQueryProbe(cache, 32, 8, 128, 3000);
    CheckLastQueryProbe(cache, 8, 2, 64, 77);
    CheckLastQueryProbe(cache, 4, 4, 40, 130);
    CheckLastQueryProbe(cache, 3, 3, 42, 20);
  }
}

void TokenOpsTest::CheckLastQueryProbe(DType cache, int64_t heads,
                                       int64_t kv_heads, int64_t hd,
                                       int64_t capacity) {
  SCOPED_TRACE(absl::StrCat(heads, "/", kv_heads, " heads of ", hd, ", ",
                            capacity, " rows"));
  const Tensor q = RandomHost({1, heads * hd});
  const Tensor k_cache = RandomHost({capacity, kv_heads * hd}, cache);
  const Tensor k = Tensor::FromF32(k_cache.ToF32Vector(), k_cache.shape());
  std::vector<int32_t> keys;
  for (int32_t p = 0; p < capacity; ++p) {
    if (p % 3 != 1 || p == capacity - 1) keys.push_back(p);
  }
  const int64_t nk = static_cast<int64_t>(keys.size());
  Tensor ref = Tensor::Zeros(DType::kF32, {nk});
  LastQueryArgs cpu_args{&q, &k, keys, heads, kv_heads, hd, 0.088f, &ref};
  cpu::LastQueryAttention(cpu_args);

  const Tensor dq = Upload(q), dk = Upload(k_cache);
  const Tensor dkeys = Upload(Tensor::FromI32(keys, {nk}));
  Tensor out = PoisonedDevice(DType::kF32, {nk});
  DeviceLastQueryArgs args;
  args.q = &dq;
  args.k_cache = &dk;
  args.key_rows = dkeys.data<int32_t>();
  args.num_keys = nk;
  args.num_heads = heads;
  args.num_kv_heads = kv_heads;
  args.head_dim = hd;
  args.scale = 0.088f;
  args.out = &out;
  Tensor scratch = PoisonedDevice(DType::kF32, {LastQueryScratchFloats(args)});
  ASSERT_TRUE(
      LastQueryAttentionDevice(ctx(), args, scratch.data<float>()).ok());
  EXPECT_LT(testutil::RelativeError(Download(out), ref.ToF32Vector()), 1e-5)
      << SeedMessage();
}

TEST_F(TokenOpsTest, CopyRowsGathersAndScatters) {
  const Tensor src = RandomHost({10, 12});
  const std::vector<int32_t> from = {9, 0, 4}, to = {1, 5, 2};
  Tensor ref = Tensor::Zeros(DType::kF32, {6, 12});
  CpuBackend cpu(1);
  cpu.CopyRows(src, from, to, &ref);
  const Tensor dsrc = Upload(src);
  Tensor dst = Upload(Tensor::Zeros(DType::kF32, {6, 12}));
  const Tensor dfrom = Upload(Tensor::FromI32(from, {3}));
  const Tensor dto = Upload(Tensor::FromI32(to, {3}));
  ASSERT_TRUE(CopyRowsDevice(ctx(), dsrc, dfrom.data<int32_t>(),
                             dto.data<int32_t>(), 3, &dst)
                  .ok());
  EXPECT_EQ(Download(dst), ref.ToF32Vector());
}

// Keeps positions p % 3 != 1 before every layer >= 1 in the prompt's step
// and everything in decode steps (so decode revives what the prompt
// dropped); with `drop_tenths` it keeps p % 10 != 1 in every step instead
// (decode steps over key lists of nine tenths of the context); with
// `cached` decode steps keep p % 10 != 1 and attend to cached tokens too
// (Method::AttendsToCachedTokens), so they revive and use key lists. Reads
// the probe every time and records it per (step, layer): a
// decode step CudaBackend tried to capture as a CUDA graph is discarded and
// rerun eagerly, and the rerun's probe replaces the discarded one. `early`:
// MayProbeBefore (CudaBackend::StartRead / FinishRead); with
// `skip_layer_2` the probe started for layer 2 goes unread.
class EveryThirdDropped : public Method {
 public:
  EveryThirdDropped(bool early = false, bool skip_layer_2 = false,
                    bool drop_tenths = false, bool cached = false)
      : early_(early),
        skip_layer_2_(skip_layer_2),
        drop_tenths_(drop_tenths),
        cached_(cached) {}
  std::string name() const override { return "every-third-dropped"; }
  absl::Status Attach(const ModelConfig&, Backend&) override {
    return absl::OkStatus();
  }
  bool SelectsTokens() const override { return true; }
  bool MayProbeBefore(const LayerSite&) const override { return early_; }
  bool AttendsToCachedTokens() const override { return cached_; }
  void SelectTokens(const LayerSite& site, TokenCandidates& candidates,
                    TokenSelection* keep) override {
    if (skip_layer_2_ && site.layer == 2) return;
    const absl::Span<const float> probe = candidates.LastQueryAttention();
    probes[{candidates.first_new(), site.layer}].assign(probe.begin(),
                                                        probe.end());
    const bool prompt = candidates.first_new() == 0;
    if (!prompt && !drop_tenths_ && !cached_) return;
    keep->all = false;
    const int32_t period = drop_tenths_ || (cached_ && !prompt) ? 10 : 3;
    for (size_t i = 0; i < candidates.positions().size(); ++i) {
      if (candidates.positions()[i] % period != 1) {
        keep->keep_rows.push_back(static_cast<int32_t>(i));
      }
    }
  }
  std::map<std::pair<int32_t, int64_t>, std::vector<float>> probes;

 private:
  bool early_;
  bool skip_layer_2_;
  bool drop_tenths_;
  bool cached_;
};

// Early probes: `early` downloads each probe while the previous layer's
// MLP runs; `skip_layer_2` leaves one started probe unread. f16 weights put
// CudaBackend's K/V in f16 (the CPU keeps f32): `tolerance` covers that.
void CheckPrunedSessionMatchesCpu(bool early, bool skip_layer_2,
                                  DType weights = DType::kF32,
                                  double tolerance = 3e-3,
                                  bool drop_tenths = false, bool cached = false,
                                  int64_t keyed_tensor_core_rows = 9) {
  SCOPED_TRACE(
      absl::StrCat("early ", early, " skip_layer_2 ", skip_layer_2, " weights ",
                   DTypeName(weights), " drop_tenths ", drop_tenths, " cached ",
                   cached, " keyed tensor-core rows ", keyed_tensor_core_rows));
  CudaBackendOptions backend_options;
  backend_options.tensor_core_keyed_attention_rows = keyed_tensor_core_rows;
  auto backend = CudaBackend::Create(backend_options);
  ASSERT_TRUE(backend.ok()) << backend.status();
  LoadOptions options;
  options.dtype = weights;
  auto model =
      LoadModel(testing::FixturePath("models/llama-gqa-llama3rope"), options);
  ASSERT_TRUE(model.ok()) << model.status();
  auto device = (*backend)->UploadWeights(model->weights);
  ASSERT_TRUE(device.ok()) << device.status();
  CpuBackend cpu(2);
  EveryThirdDropped cpu_method(false, skip_layer_2, drop_tenths, cached),
      cuda_method(early, skip_layer_2, drop_tenths, cached);
  const int64_t prompt = 300, steps = 6;  // >= 256 rows: tensor cores
  Session on_cpu(model->config, model->weights, cpu, cpu_method,
                 prompt + steps);
  Session on_cuda(model->config, *device, **backend, cuda_method,
                  prompt + steps);
  std::vector<int32_t> ids(prompt);
  for (int64_t i = 0; i < prompt; ++i) ids[i] = (i * 37 + 11) % 512;
  auto a = on_cpu.Forward(ids, prompt - 1);
  auto b = on_cuda.Forward(ids, prompt - 1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT(testutil::RelativeError(b->ToF32Vector(), a->ToF32Vector()),
            tolerance);
  EXPECT_EQ(on_cuda.cache().keys(0).dtype(), (*backend)->KvCacheDtype(weights));
  for (int64_t s = 0; s < steps; ++s) {
    const std::vector<int32_t> next = {static_cast<int32_t>(s * 5 + 1)};
    a = on_cpu.Forward(next, 0);
    b = on_cuda.Forward(next, 0);
    ASSERT_TRUE(a.ok() && b.ok());
    // The prefill's tensor-core attention (f16 operands) left ~1e-3
    // differences in the caches.
    EXPECT_LT(testutil::RelativeError(b->ToF32Vector(), a->ToF32Vector()),
              tolerance)
        << "decode step " << s;
  }
  if (!drop_tenths) {
    EXPECT_GT(on_cuda.token_state()->stats().revived, 0);
  }
  EXPECT_EQ(on_cuda.token_state()->stats().computed,
            on_cpu.token_state()->stats().computed);
  ASSERT_EQ(cuda_method.probes.size(), cpu_method.probes.size());
  for (const auto& [site, probe] : cpu_method.probes) {
    EXPECT_LT(testutil::RelativeError(cuda_method.probes[site], probe),
              tolerance)
        << "step at " << site.first << ", layer " << site.second;
  }
}

TEST_F(TokenOpsTest, PrunedSessionMatchesCpu) {
  ctx_.reset();  // The backend owns its own context.
  CheckPrunedSessionMatchesCpu(false, false);
  CheckPrunedSessionMatchesCpu(true, false);
  CheckPrunedSessionMatchesCpu(true, true);
  // The f16 cache through keyed attention, probes and revival (f16 weights
  // on both sides; HalfPrecisionLogitsMatchCpu's bound for f16).
  CheckPrunedSessionMatchesCpu(true, false, DType::kF16, 5e-3);
  // Decode steps over key lists of 9/10 of the context, no revival.
  CheckPrunedSessionMatchesCpu(true, false, DType::kF32, 3e-3, true);
  CheckPrunedSessionMatchesCpu(true, false, DType::kF16, 5e-3, true);
  // Keys=cached: decode steps drop a tenth and revive the prompt's dropped
  // thirds, attending over key lists that miss the positions both dropped.
  CheckPrunedSessionMatchesCpu(true, false, DType::kF32, 3e-3, false, true);
  CheckPrunedSessionMatchesCpu(true, false, DType::kF16, 5e-3, false, true);
  // Every keyed attention, the new row's too, on the tensor-core split
  // kernels (q rounded to f16: the f16 bound).
  CheckPrunedSessionMatchesCpu(true, false, DType::kF32, 5e-3, false, true, 1);
}

}  // namespace
}  // namespace dynsparse::cuda
