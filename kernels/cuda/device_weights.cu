#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/device_weights.h"

namespace dynsparse::cuda {
namespace {

// Every tensor slot of a ModelWeights, in a fixed order.
void ForEachSlot(ModelWeights& w, const std::function<void(Tensor&)>& fn) {
  for (Tensor* t : {&w.tok_embed, &w.pos_embed, &w.project_in, &w.project_out,
                    &w.final_norm_w, &w.final_norm_b, &w.lm_head}) {
    fn(*t);
  }
  for (LayerWeights& l : w.layers) {
    for (Tensor* t :
         {&l.attn_norm_w, &l.attn_norm_b, &l.wq, &l.wk, &l.wv, &l.wo, &l.bq,
          &l.bk, &l.bv, &l.bo, &l.mlp_norm_w, &l.mlp_norm_b, &l.w_up, &l.w_gate,
          &l.w_down, &l.b_up, &l.b_gate, &l.b_down}) {
      fn(*t);
    }
  }
}

absl::Status CheckFreeMemory(int64_t needed, const char* what) {
  size_t free_bytes = 0, total_bytes = 0;
  DS_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  // Keep room for activations, the KV cache and cuBLAS workspaces.
  const int64_t reserve = int64_t{1} << 30;
  if (needed + reserve > static_cast<int64_t>(free_bytes)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, " need ", needed >> 20, " MiB of device memory (+ ",
                     reserve >> 20, " MiB reserve) but only ", free_bytes >> 20,
                     " of ", total_bytes >> 20, " MiB are free"));
  }
  return absl::OkStatus();
}

// splitmix64: a counter-based generator, so every element is independent of
// the launch geometry.
__device__ __forceinline__ uint64_t Mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <typename T>
__global__ void NormalFillKernel(T* out, int64_t n, uint64_t stream, float mean,
                                 float stddev) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint64_t bits = Mix(stream ^ Mix(static_cast<uint64_t>(i)));
    // Box-Muller from two 32-bit uniforms in (0, 1].
    const float u1 = (static_cast<float>(bits >> 40) + 1.0f) * 0x1p-24f;
    const float u2 = static_cast<float>((bits >> 16) & 0xffffffu) * 0x1p-24f;
    const float z = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
    const float v = mean + stddev * z;
    if constexpr (std::is_same_v<T, __half>) {
      out[i] = __float2half_rn(v);
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      out[i] = __float2bfloat16_rn(v);
    } else {
      out[i] = v;
    }
  }
}

class DeviceFactory {
 public:
  DeviceFactory(const DeviceContext& ctx, uint64_t seed, DType dtype)
      : ctx_(ctx), seed_(seed), dtype_(dtype) {}

  absl::Status status() const { return status_; }

  Tensor Normal(Shape shape, double mean, double stddev) {
    const uint64_t stream = seed_ * 0x100000001b3ull + (++counter_);
    if (!status_.ok()) return Tensor();
    absl::StatusOr<Tensor> t = AllocateDevice(ctx_, dtype_, std::move(shape));
    if (!t.ok()) {
      status_ = t.status();
      return Tensor();
    }
    const int64_t n = t->numel();
    const unsigned grid = static_cast<unsigned>(
        std::min<int64_t>(CeilDiv(n, 256), int64_t{132} * 64));
    const float m = static_cast<float>(mean), s = static_cast<float>(stddev);
    switch (dtype_) {
      case DType::kF16:
        NormalFillKernel<<<grid, 256, 0, ctx_.stream()>>>(t->data<__half>(), n,
                                                          stream, m, s);
        break;
      case DType::kBF16:
        NormalFillKernel<<<grid, 256, 0, ctx_.stream()>>>(
            t->data<__nv_bfloat16>(), n, stream, m, s);
        break;
      default:
        NormalFillKernel<<<grid, 256, 0, ctx_.stream()>>>(t->data<float>(), n,
                                                          stream, m, s);
    }
    if (absl::Status s2 = LastLaunchStatus("NormalFillKernel"); !s2.ok()) {
      status_ = s2;
    }
    return *t;
  }
  Tensor Linear(int64_t out, int64_t in) {
    return Normal({out, in}, 0.0, 1.0 / std::sqrt(static_cast<double>(in)));
  }
  Tensor Bias(bool present, int64_t n) {
    return present ? Normal({n}, 0.0, 0.05) : Tensor();
  }
  Tensor NormWeight(int64_t n) { return Normal({n}, 1.0, 0.1); }

 private:
  const DeviceContext& ctx_;
  uint64_t seed_;
  DType dtype_;
  uint64_t counter_ = 0;
  absl::Status status_;
};

}  // namespace

int64_t WeightBytes(const ModelWeights& w) {
  std::map<const void*, int64_t> seen;
  ForEachSlot(const_cast<ModelWeights&>(w), [&](Tensor& t) {
    if (!t.empty()) seen[t.raw_data()] = static_cast<int64_t>(t.bytes());
  });
  int64_t total = 0;
  for (const auto& [p, b] : seen) total += b;
  return total;
}

absl::StatusOr<ModelWeights> UploadWeights(const DeviceContext& ctx,
                                           const ModelWeights& host) {
  if (absl::Status s = CheckFreeMemory(WeightBytes(host), "the weights");
      !s.ok()) {
    return s;
  }
  ModelWeights device = host;
  std::map<const void*, Tensor> uploaded;
  absl::Status status;
  // Projections that share an input go into one allocation, back to back,
  // so CudaBackend::LinearGroup can run them as one GEMV.
  auto upload_group = [&](std::initializer_list<Tensor*> parts) {
    if (!status.ok()) return;
    int64_t rows = 0;
    const Tensor& first = **parts.begin();
    for (Tensor* t : parts) {
      if (t->empty() || t->device() != Device::kCpu ||
          t->dtype() != first.dtype() || t->rank() != first.rank() ||
          (t->rank() == 2 && t->dim(1) != first.dim(1))) {
        return;  // Uploaded one by one below.
      }
      rows += t->dim(0);
    }
    Shape shape = first.shape();
    shape[0] = rows;
    absl::StatusOr<Tensor> parent = AllocateDevice(ctx, first.dtype(), shape);
    if (!parent.ok()) {
      status = parent.status();
      return;
    }
    int64_t row = 0;
    for (Tensor* t : parts) {
      Tensor slice = parent->Rows(row, row + t->dim(0));
      row += t->dim(0);
      if (absl::Status s = CopyHostToDevice(ctx, *t, &slice); !s.ok()) {
        status = s;
        return;
      }
      *t = slice;
    }
  };
  for (LayerWeights& l : device.layers) {
    upload_group({&l.wq, &l.wk, &l.wv});
    upload_group({&l.bq, &l.bk, &l.bv});
    upload_group({&l.w_up, &l.w_gate});
    upload_group({&l.b_up, &l.b_gate});
  }
  ForEachSlot(device, [&](Tensor& t) {
    if (t.empty() || !status.ok()) return;
    if (t.device() == Device::kCuda) return;
    auto it = uploaded.find(t.raw_data());
    if (it != uploaded.end() && it->second.shape() == t.shape()) {
      t = it->second;
      return;
    }
    const void* key = t.raw_data();
    absl::StatusOr<Tensor> d = ToDevice(ctx, t);
    if (!d.ok()) {
      status = d.status();
      return;
    }
    uploaded.emplace(key, *d);
    t = *d;
  });
  if (!status.ok()) return status;
  return device;
}

absl::StatusOr<ModelWeights> DeviceRandomWeights(const DeviceContext& ctx,
                                                 const ModelConfig& c,
                                                 uint64_t seed, DType dtype) {
  const int64_t needed =
      c.ParameterCount() * static_cast<int64_t>(DTypeSize(dtype));
  if (absl::Status s = CheckFreeMemory(
          needed, absl::StrCat("random ", DTypeName(dtype), " weights of ",
                               c.ParameterCount(), " parameters")
                      .c_str());
      !s.ok()) {
    return s;
  }
  DeviceFactory f(ctx, seed, dtype);
  const bool opt = c.family == ModelFamily::kOpt;
  const int64_t h = c.hidden_size;
  ModelWeights w;
  w.tok_embed = f.Normal({c.vocab_size, c.embed_dim()}, 0.0, 1.0);
  if (opt) {
    w.pos_embed =
        f.Normal({c.max_position_embeddings + c.position_offset, h}, 0.0, 0.5);
  }
  if (c.has_projection()) {
    w.project_in = f.Linear(h, c.embed_dim());
    w.project_out = f.Linear(c.embed_dim(), h);
  }
  for (int64_t l = 0; l < c.num_layers && f.status().ok(); ++l) {
    LayerWeights layer;
    layer.attn_norm_w = f.NormWeight(h);
    layer.attn_norm_b = f.Bias(opt, h);
    // q, k and v (and up, gate) back to back, as UploadWeights lays them.
    const int64_t qd = c.q_dim(), kvd = c.kv_dim();
    const Tensor qkv = f.Linear(qd + 2 * kvd, h);
    if (!f.status().ok()) break;
    layer.wq = qkv.Rows(0, qd);
    layer.wk = qkv.Rows(qd, qd + kvd);
    layer.wv = qkv.Rows(qd + kvd, qd + 2 * kvd);
    layer.wo = f.Linear(h, c.q_dim());
    if (c.qkv_bias) {
      const Tensor b = f.Bias(true, qd + 2 * kvd);
      if (!f.status().ok()) break;
      layer.bq = b.Rows(0, qd);
      layer.bk = b.Rows(qd, qd + kvd);
      layer.bv = b.Rows(qd + kvd, qd + 2 * kvd);
    }
    layer.bo = f.Bias(c.o_bias, h);
    layer.mlp_norm_w = f.NormWeight(h);
    layer.mlp_norm_b = f.Bias(opt, h);
    const int64_t inter = c.intermediate_size;
    if (c.gated_mlp) {
      const Tensor up_gate = f.Linear(2 * inter, h);
      if (!f.status().ok()) break;
      layer.w_up = up_gate.Rows(0, inter);
      layer.w_gate = up_gate.Rows(inter, 2 * inter);
      if (c.mlp_bias) {
        const Tensor b = f.Bias(true, 2 * inter);
        if (!f.status().ok()) break;
        layer.b_up = b.Rows(0, inter);
        layer.b_gate = b.Rows(inter, 2 * inter);
      }
    } else {
      layer.w_up = f.Linear(inter, h);
      layer.b_up = f.Bias(c.mlp_bias, inter);
    }
    layer.w_down = f.Linear(h, inter);
    layer.b_down = f.Bias(c.mlp_bias, h);
    w.layers.push_back(std::move(layer));
  }
  if (c.final_norm) {
    w.final_norm_w = f.NormWeight(h);
    w.final_norm_b = f.Bias(opt, h);
  }
  w.lm_head = c.tie_word_embeddings ? w.tok_embed
                                    : f.Linear(c.vocab_size, c.embed_dim());
  if (!f.status().ok()) return f.status();
  if (absl::Status s = ctx.Synchronize(); !s.ok()) return s;
  return w;
}

}  // namespace dynsparse::cuda
