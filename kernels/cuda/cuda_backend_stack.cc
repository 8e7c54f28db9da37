// CudaBackend::DecodeStack: a dense decode row through every layer in the
// persistent kernel of decode_stack.h, where the model's tensors fit it.
// Anything else (f32 weights, a head_dim other than 128, views that are not
// 16-byte aligned, widths past 16K) declines, and Session runs the layers
// one by one as before. DecodeStackShapeOf and DecodeStackEntry
// (decode_stack.h) build the kernel's table here and in
// tools/decode_stack_trace.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/decode_stack.h"
#include "kernels/cuda/op_signature.h"

namespace dynsparse::cuda {
namespace {

// A dense row-major CUDA tensor of `dtype` and shape {rows, cols} (cols < 0:
// rank 1 of `rows`), 16-byte aligned.
bool Fits(const Tensor& t, DType dtype, int64_t rows, int64_t cols) {
  if (t.empty() || t.device() != Device::kCuda || t.dtype() != dtype ||
      reinterpret_cast<uintptr_t>(t.raw_data()) % 16 != 0) {
    return false;
  }
  return cols < 0 ? t.rank() == 1 && t.dim(0) == rows
                  : t.rank() == 2 && t.dim(0) == rows && t.dim(1) == cols;
}

// An optional bias or LayerNorm beta: empty, or a vector of `rows`.
bool FitsOptional(const Tensor& t, DType dtype, int64_t rows) {
  return t.empty() || Fits(t, dtype, rows, -1);
}

// True when layer `l`'s tensors are what the kernel reads.
bool LayerFits(const LayerWeights& l, const DecodeStackShape& s,
               const Tensor& k_cache, const Tensor& v_cache) {
  const DType t = s.dtype;
  const int64_t h = s.hidden, q = s.heads * s.head_dim,
                kv = s.kv_heads * s.head_dim, f = s.inter;
  return Fits(l.wq, t, q, h) && Fits(l.wk, t, kv, h) && Fits(l.wv, t, kv, h) &&
         Fits(l.wo, t, h, q) && Fits(l.w_up, t, f, h) &&
         (s.gated ? Fits(l.w_gate, t, f, h) : l.w_gate.empty()) &&
         Fits(l.w_down, t, h, f) && FitsOptional(l.bq, t, q) &&
         FitsOptional(l.bk, t, kv) && FitsOptional(l.bv, t, kv) &&
         FitsOptional(l.bo, t, h) && FitsOptional(l.b_up, t, f) &&
         FitsOptional(l.b_gate, t, f) && FitsOptional(l.b_down, t, h) &&
         Fits(l.attn_norm_w, t, h, -1) && FitsOptional(l.attn_norm_b, t, h) &&
         Fits(l.mlp_norm_w, t, h, -1) && FitsOptional(l.mlp_norm_b, t, h) &&
         Fits(k_cache, DType::kF32, s.capacity, kv) &&
         Fits(v_cache, DType::kF32, s.capacity, kv);
}

}  // namespace

DecodeStackShape DecodeStackShapeOf(const ModelConfig& c, DType dtype,
                                    int64_t capacity) {
  DecodeStackShape s;
  s.hidden = c.hidden_size;
  s.heads = c.num_heads;
  s.kv_heads = c.num_kv_heads;
  s.head_dim = c.head_dim;
  s.inter = c.intermediate_size;
  s.gated = c.gated_mlp;
  s.activation = c.activation;
  s.rms_norm = c.family != ModelFamily::kOpt;
  s.norm_eps = static_cast<float>(c.norm_eps);
  s.dtype = dtype;
  s.capacity = capacity;
  return s;
}

DecodeStackLayer DecodeStackEntry(const LayerWeights& l, float* k_cache,
                                  float* v_cache) {
  auto or_null = [](const Tensor& t) -> const void* {
    return t.empty() ? nullptr : t.raw_data();
  };
  DecodeStackLayer e;
  e.w_qkv[0] = l.wq.raw_data();
  e.w_qkv[1] = l.wk.raw_data();
  e.w_qkv[2] = l.wv.raw_data();
  e.b_qkv[0] = or_null(l.bq);
  e.b_qkv[1] = or_null(l.bk);
  e.b_qkv[2] = or_null(l.bv);
  e.w_o = l.wo.raw_data();
  e.b_o = or_null(l.bo);
  e.w_up = l.w_up.raw_data();
  e.b_up = or_null(l.b_up);
  e.w_gate = or_null(l.w_gate);
  e.b_gate = or_null(l.b_gate);
  e.w_down = l.w_down.raw_data();
  e.b_down = or_null(l.b_down);
  e.attn_norm_w = l.attn_norm_w.raw_data();
  e.attn_norm_b = or_null(l.attn_norm_b);
  e.mlp_norm_w = l.mlp_norm_w.raw_data();
  e.mlp_norm_b = or_null(l.mlp_norm_b);
  e.k_cache = k_cache;
  e.v_cache = v_cache;
  return e;
}

bool CudaBackend::DecodeStack(const DecodeStackArgs& args) {
  if (!options_.fused_ops || !options_.fuse_norm || !options_.decode_stack) {
    return false;
  }
  const std::vector<LayerWeights>& layers = *args.layers;
  const int64_t n = static_cast<int64_t>(layers.size());
  if (n == 0 || static_cast<int64_t>(args.k_caches.size()) != n ||
      static_cast<int64_t>(args.v_caches.size()) != n ||
      !Fits(*args.x, DType::kF32, 1, args.config->hidden_size)) {
    return false;
  }
  const DecodeStackShape shape = DecodeStackShapeOf(
      *args.config, layers[0].wq.dtype(), args.k_caches[0]->dim(0));
  for (int64_t i = 0; i < n; ++i) {
    if (!LayerFits(layers[i], shape, *args.k_caches[i], *args.v_caches[i])) {
      return false;
    }
  }
  // The device queries behind the verdict run once per shape.
  const std::string key =
      absl::StrCat(shape.hidden, ",", shape.heads, ",", shape.kv_heads, ",",
                   shape.head_dim, ",", shape.inter, ",", shape.gated, ",",
                   static_cast<int>(shape.dtype), ",", n);
  if (key != stack_shape_key_) {
    stack_unsupported_ = DecodeStackUnsupported(*ctx_, shape, n);
    stack_shape_key_ = key;
  }
  if (!stack_unsupported_.empty()) return false;

  std::vector<DecodeStackLayer> table(n);
  uint64_t sig =
      MixTensor(Mix(kOpDecodeStack, static_cast<uint64_t>(n)), *args.x);
  for (int64_t i = 0; i < n; ++i) {
    table[i] = DecodeStackEntry(layers[i], args.k_caches[i]->data<float>(),
                                args.v_caches[i]->data<float>());
    for (const void* p :
         {table[i].w_qkv[0], table[i].w_o, table[i].w_up, table[i].w_down,
          static_cast<const void*>(table[i].k_cache)}) {
      sig = Mix(sig, reinterpret_cast<uintptr_t>(p));
    }
  }
  const Tensor none;
  const Tensor& freq =
      args.rope->enabled() ? RopeFrequencies(*args.rope) : none;
  Tensor scratch = Allocate(DType::kF32, {DecodeStackScratchFloats(shape)});
  sig = MixTensor(MixTensor(sig, freq), scratch);
  const int32_t* position =
      StageIndices(absl::MakeConstSpan(&args.position, 1), &sig);
  ++stack_steps_;
  if (!Op(sig)) return true;  // Replayed (or rerun eagerly) as a graph node.
  Check(cuda::DecodeStack(*active_, shape, table, position,
                          freq.empty() ? nullptr : freq.data<float>(),
                          args.x->data<float>(), scratch.data<float>(),
                          static_cast<unsigned*>(stack_barrier_.raw_data())),
        "DecodeStack");
  return true;
}

}  // namespace dynsparse::cuda
