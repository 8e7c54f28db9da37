// LoadLlama2cModel: a legacy llama2.c checkpoint as an HF-layout Llama.
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/io/llama2c_format.h"
#include "core/io/mapped_file.h"
#include "core/io/model_loader.h"
#include "core/io/rope_permute.h"
#include "core/io/tensor_convert.h"
#include "core/io/weights_id.h"
#include "core/status_macros.h"

namespace dynsparse {
namespace {

ModelConfig Llama2cConfig(const Llama2cHeader& h) {
  ModelConfig c;
  c.architecture = "llama2.c";
  c.model_type = "llama";
  c.family = ModelFamily::kLlama;
  c.vocab_size = h.vocab_size;
  c.hidden_size = h.dim;
  c.intermediate_size = h.hidden_dim;
  c.num_layers = h.n_layers;
  c.num_heads = h.n_heads;
  c.num_kv_heads = h.n_kv_heads;
  c.head_dim = h.head_size();
  c.max_position_embeddings = h.seq_len;
  c.activation = Activation::kSilu;
  c.gated_mlp = true;
  c.norm_eps = 1e-5;  // run.c's rmsnorm constant.
  c.position_offset = 0;
  c.rope_theta = 10000.0;
  c.tie_word_embeddings = h.shared_classifier;
  c.bos_token_id = 1;
  c.eos_token_ids = {2};
  c.checkpoint_dtype = DType::kF32;
  return c;
}

// Cuts per-layer tensors out of the file's arrays.
class Llama2cArrays {
 public:
  Llama2cArrays(const MappedFile& file, const std::vector<Llama2cArray>& arrays,
                DType dtype)
      : file_(&file), dtype_(dtype) {
    for (const Llama2cArray& a : arrays) arrays_[a.name] = a;
  }

  // Layer `layer` of array `name`, viewed as `shape`, in `dtype`.
  absl::StatusOr<Tensor> Get(absl::string_view name, int64_t layer,
                             const Shape& shape, DType dtype) const {
    const Llama2cArray& array = arrays_.at(name);
    const uint64_t per_layer = NumElements(shape);
    RawTensor raw;
    raw.storage = file_->storage();
    raw.byte_offset = array.offset + layer * per_layer * sizeof(float);
    raw.dtype = StDType::kF32;
    raw.shape = shape;
    return MaterializeTensor(
        raw, dtype,
        absl::StrCat(file_->path(), ": llama2.c array '", name, "'"));
  }
  absl::StatusOr<Tensor> Get(absl::string_view name, int64_t layer,
                             const Shape& shape) const {
    return Get(name, layer, shape, dtype_);
  }

  // q/k rows reordered for rotate_half RoPE (see rope_permute.h).
  absl::StatusOr<Tensor> GetRotary(absl::string_view name, int64_t layer,
                                   const Shape& shape, int64_t heads) const {
    ASSIGN_OR_RETURN(const Tensor f32, Get(name, layer, shape, DType::kF32));
    Tensor permuted = InterleavedToHalfRotary(f32, heads);
    return dtype_ == DType::kF32 ? permuted : permuted.ConvertTo(dtype_);
  }

 private:
  const MappedFile* file_;
  DType dtype_;
  std::map<absl::string_view, Llama2cArray> arrays_;
};

absl::StatusOr<LayerWeights> LoadLayer(const Llama2cHeader& h,
                                       const Llama2cArrays& a, int64_t i) {
  const int64_t d = h.dim, kv = h.kv_dim(), f = h.hidden_dim;
  LayerWeights l;
  ASSIGN_OR_RETURN(l.attn_norm_w, a.Get("rms_att", i, {d}));
  ASSIGN_OR_RETURN(l.wq, a.GetRotary("wq", i, {d, d}, h.n_heads));
  ASSIGN_OR_RETURN(l.wk, a.GetRotary("wk", i, {kv, d}, h.n_kv_heads));
  ASSIGN_OR_RETURN(l.wv, a.Get("wv", i, {kv, d}));
  ASSIGN_OR_RETURN(l.wo, a.Get("wo", i, {d, d}));
  ASSIGN_OR_RETURN(l.mlp_norm_w, a.Get("rms_ffn", i, {d}));
  ASSIGN_OR_RETURN(l.w_gate, a.Get("w1", i, {f, d}));
  ASSIGN_OR_RETURN(l.w_down, a.Get("w2", i, {d, f}));
  ASSIGN_OR_RETURN(l.w_up, a.Get("w3", i, {f, d}));
  return l;
}

}  // namespace

absl::StatusOr<LoadedModel> LoadLlama2cModel(const std::string& path,
                                             const LoadOptions& options) {
  if (options.dtype == DType::kI32) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": weights must load as f32, f16 or bf16"));
  }
  ASSIGN_OR_RETURN(const MappedFile file, MappedFile::Open(path));
  ASSIGN_OR_RETURN(const Llama2cHeader header,
                   ParseLlama2cHeader(file.data(), file.size(), path));
  ASSIGN_OR_RETURN(const std::vector<Llama2cArray> layout,
                   Llama2cLayout(header, file.size(), path));
  const Llama2cArrays arrays(file, layout, options.dtype);

  LoadedModel model;
  model.config = Llama2cConfig(header);
  model.config.weights_id =
      WeightsIdOfBytes(absl::MakeConstSpan(file.data(), file.size()));
  model.source = path;
  model.checkpoint_bytes =
      static_cast<int64_t>(file.size() - kLlama2cHeaderBytes);
  ModelWeights& w = model.weights;
  ASSIGN_OR_RETURN(w.tok_embed, arrays.Get("token_embedding", 0,
                                           {header.vocab_size, header.dim}));
  for (int64_t i = 0; i < header.n_layers; ++i) {
    ASSIGN_OR_RETURN(LayerWeights layer, LoadLayer(header, arrays, i));
    w.layers.push_back(std::move(layer));
  }
  ASSIGN_OR_RETURN(w.final_norm_w, arrays.Get("rms_final", 0, {header.dim}));
  // freq_cis_* are skipped: the graph computes RoPE from rope_theta.
  if (header.shared_classifier) {
    w.lm_head = w.tok_embed;
  } else {
    ASSIGN_OR_RETURN(w.lm_head,
                     arrays.Get("wcls", 0, {header.vocab_size, header.dim}));
  }
  return model;
}

}  // namespace dynsparse
