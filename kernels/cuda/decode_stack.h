// A dense decode row through every decoder layer in one persistent kernel
// (decode_stack.cu): one block per SM streams its share of each layer's
// weights (q/k/v, o, up[/gate], down) through thread-private shared-memory
// stages, and grid barriers separate the phases. The stages run ahead across
// the barriers and the attention, so the weight stream does not stop where
// separate kernels ramp up and drain (issue 5: five kernel boundaries a
// layer cost ~25 us against 94 us of weight bytes on Llama-2-7B).
#ifndef DYNSPARSE_KERNELS_CUDA_DECODE_STACK_H_
#define DYNSPARSE_KERNELS_CUDA_DECODE_STACK_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/model_config.h"
#include "core/model_weights.h"
#include "core/tensor.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {

// Raw device pointers of one layer; biases and LayerNorm's beta may be null,
// w_gate is null for an ungated MLP. Weights share one dtype (f16 or bf16).
struct DecodeStackLayer {
  const void* w_qkv[3] = {};  // wq [q_dim, hidden], wk, wv [kv_dim, hidden]
  const void* b_qkv[3] = {};
  const void* w_o = nullptr;  // [hidden, q_dim]
  const void* b_o = nullptr;
  const void* w_up = nullptr;  // [inter, hidden]
  const void* b_up = nullptr;
  const void* w_gate = nullptr;
  const void* b_gate = nullptr;
  const void* w_down = nullptr;  // [hidden, inter]
  const void* b_down = nullptr;
  const void* attn_norm_w = nullptr;
  const void* attn_norm_b = nullptr;
  const void* mlp_norm_w = nullptr;
  const void* mlp_norm_b = nullptr;
  float* k_cache = nullptr;  // f32 [capacity, kv_dim], rotated keys
  float* v_cache = nullptr;
};

inline constexpr int kDecodeStackMaxLayers = 96;
inline constexpr int kDecodeStackHeadDim = 128;
inline constexpr int kDecodeStackMaxHeads = 256;
// Device words DecodeStack's `barrier` holds.
inline constexpr int kDecodeStackBarrierWords = 2 + kDecodeStackMaxHeads;
// Timeline events a layer, in order: 0 the layer begins; for each GEMV phase
// p (0 q/k/v, 1 o-projection, 2 up[/gate], 3 down), 1 + 3p its input is
// loaded (and normalised), 2 + 3p its rows are done, 3 + 3p the grid
// barrier after it is passed; 13 the attention is done, 14 the barrier
// after it is passed. The attention runs between events 3 and 13.
inline constexpr int kDecodeStackEvents = 15;

struct DecodeStackShape {
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t inter = 0;
  bool gated = false;  // act(x w_gate^T + b_gate) * (x w_up^T + b_up)
  Activation activation = Activation::kSilu;
  bool rms_norm = true;  // else LayerNorm (OPT)
  float norm_eps = 1e-5f;
  DType dtype = DType::kF16;
  int64_t capacity = 0;  // KV cache rows
};

// Why the kernel does not run this shape on this device, or "" when it
// does: head_dim 128, f16/bf16 weights, widths multiples of 8 and at most
// 16384, at most kDecodeStackMaxLayers layers and kDecodeStackMaxHeads
// heads, at most 512 rows of a projection per SM, cooperative launch. It
// also opts the kernel into its shared memory, so DecodeStack runs only
// shapes it has accepted.
std::string DecodeStackUnsupported(const DeviceContext& ctx,
                                   const DecodeStackShape& shape,
                                   int64_t layers);

// Floats of scratch DecodeStack needs (q/k/v, attention context and
// partials, MLP activations).
int64_t DecodeStackScratchFloats(const DecodeStackShape& shape);

// x (f32 [hidden], the residual stream) <- every layer applied to it, for
// one row at *position (device i32), writing that row's K/V into each
// layer's cache. `barrier` is kDecodeStackBarrierWords device words, zero
// before the first call (a grid barrier and per-head counters); the kernel
// leaves them zero. RoPE when inv_freq (device f32,
// head_dim / 2) is not null. Same values as the layer-by-layer path up to
// f32 summation order. A `timeline` (device, [layers][kDecodeStackEvents]
// [grid = SMs]) gets each block's %globaltimer (ns) at every event
// (tools/decode_stack_trace).
absl::Status DecodeStack(DeviceContext& ctx, const DecodeStackShape& shape,
                         absl::Span<const DecodeStackLayer> layers,
                         const int32_t* position, const float* inv_freq,
                         float* x, float* scratch, unsigned* barrier,
                         uint64_t* timeline = nullptr);

// The kernel's shape of `config`'s layers, `dtype` weights and KV caches of
// `capacity` rows.
DecodeStackShape DecodeStackShapeOf(const ModelConfig& config, DType dtype,
                                    int64_t capacity);

// A layer's entry: the device pointers of its weights and of its f32 caches.
DecodeStackLayer DecodeStackEntry(const LayerWeights& l, float* k_cache,
                                  float* v_cache);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_DECODE_STACK_H_
