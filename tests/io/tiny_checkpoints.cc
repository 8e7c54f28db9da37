#include "tests/io/tiny_checkpoints.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "tests/io/temp_dir.h"

namespace dynsparse::testing {
namespace {

// Builds the tensor list, giving tensor k the values (k + 1) / 8 + i / 256,
// so no two tensors hold the same values.
class TensorList {
 public:
  void Add(const std::string& name, Shape shape) {
    const int64_t n = NumElements(shape);
    const float base = static_cast<float>(tensors_.size() + 1) / 8.0f;
    std::vector<float> values(n);
    for (int64_t i = 0; i < n; ++i) values[i] = base + (i % 64) / 256.0f;
    tensors_.push_back(F32Tensor(name, std::move(shape), values));
  }
  std::vector<StTensor> Take() { return std::move(tensors_); }

 private:
  std::vector<StTensor> tensors_;
};

}  // namespace

StTensor* TinyCheckpoint::Find(absl::string_view name) {
  for (StTensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

void TinyCheckpoint::Remove(absl::string_view name) {
  tensors.erase(
      std::remove_if(tensors.begin(), tensors.end(),
                     [&](const StTensor& t) { return t.name == name; }),
      tensors.end());
}

std::vector<float> TinyCheckpoint::Values(absl::string_view name) const {
  for (const StTensor& t : tensors) {
    if (t.name != name) continue;
    std::vector<float> values(t.bytes.size() / sizeof(float));
    std::memcpy(values.data(), t.bytes.data(), t.bytes.size());
    return values;
  }
  return {};
}

int64_t TinyCheckpoint::TotalBytes() const {
  int64_t total = 0;
  for (const StTensor& t : tensors) total += t.bytes.size();
  return total;
}

void TinyCheckpoint::StoreAsBF16() {
  for (StTensor& t : tensors) {
    const size_t n = t.bytes.size() / sizeof(float);
    std::vector<float> values(n);
    std::memcpy(values.data(), t.bytes.data(), t.bytes.size());
    std::vector<uint16_t> bits(n);
    for (size_t i = 0; i < n; ++i) bits[i] = F32ToBF16(values[i]);
    t.dtype = "BF16";
    t.bytes = BytesOf(bits);
  }
}

TinyCheckpoint MakeTinyLlama(const TinyLlamaSpec& s) {
  const bool qwen2 = s.architecture == "Qwen2ForCausalLM";
  const int64_t head_dim = s.hidden / s.heads;
  const int64_t q = s.heads * head_dim, kv = s.kv_heads * head_dim;
  const int64_t h = s.hidden, f = s.intermediate;
  TinyCheckpoint c;
  c.config = {{"architectures", {s.architecture}},
              {"hidden_size", h},
              {"intermediate_size", f},
              {"num_attention_heads", s.heads},
              {"num_key_value_heads", s.kv_heads},
              {"num_hidden_layers", s.layers},
              {"vocab_size", s.vocab},
              {"rms_norm_eps", 1e-5},
              {"tie_word_embeddings", s.tied},
              {"attention_bias", s.attention_bias},
              {"mlp_bias", s.mlp_bias},
              {"torch_dtype", "float32"}};
  const bool qkv_bias = qwen2 || s.attention_bias;
  const bool o_bias = !qwen2 && s.attention_bias;
  TensorList t;
  t.Add("model.embed_tokens.weight", {s.vocab, h});
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string p = absl::StrCat("model.layers.", i, ".");
    t.Add(p + "input_layernorm.weight", {h});
    t.Add(p + "self_attn.q_proj.weight", {q, h});
    t.Add(p + "self_attn.k_proj.weight", {kv, h});
    t.Add(p + "self_attn.v_proj.weight", {kv, h});
    t.Add(p + "self_attn.o_proj.weight", {h, q});
    if (qkv_bias) {
      t.Add(p + "self_attn.q_proj.bias", {q});
      t.Add(p + "self_attn.k_proj.bias", {kv});
      t.Add(p + "self_attn.v_proj.bias", {kv});
    }
    if (o_bias) t.Add(p + "self_attn.o_proj.bias", {h});
    t.Add(p + "post_attention_layernorm.weight", {h});
    t.Add(p + "mlp.gate_proj.weight", {f, h});
    t.Add(p + "mlp.up_proj.weight", {f, h});
    t.Add(p + "mlp.down_proj.weight", {h, f});
    if (s.mlp_bias) {
      t.Add(p + "mlp.gate_proj.bias", {f});
      t.Add(p + "mlp.up_proj.bias", {f});
      t.Add(p + "mlp.down_proj.bias", {h});
    }
  }
  t.Add("model.norm.weight", {h});
  if (!s.tied) t.Add("lm_head.weight", {s.vocab, h});
  c.tensors = t.Take();
  return c;
}

TinyCheckpoint MakeTinyOpt(const TinyOptSpec& s) {
  const int64_t h = s.hidden, f = s.ffn, e = s.word_embed_proj_dim;
  TinyCheckpoint c;
  c.config = {{"architectures", {"OPTForCausalLM"}},
              {"model_type", "opt"},
              {"hidden_size", h},
              {"ffn_dim", f},
              {"num_attention_heads", s.heads},
              {"num_hidden_layers", s.layers},
              {"vocab_size", s.vocab},
              {"max_position_embeddings", s.max_positions},
              {"word_embed_proj_dim", e},
              {"do_layer_norm_before", s.pre_norm},
              {"tie_word_embeddings", s.tied},
              {"activation_function", "relu"}};
  const std::string& p = s.prefix;
  TensorList t;
  t.Add(p + "embed_tokens.weight", {s.vocab, e});
  t.Add(p + "embed_positions.weight", {s.max_positions + 2, h});
  if (e != h) {
    t.Add(p + "project_in.weight", {h, e});
    t.Add(p + "project_out.weight", {e, h});
  }
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string l = absl::StrCat(p, "layers.", i, ".");
    for (const char* proj : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      t.Add(absl::StrCat(l, "self_attn.", proj, ".weight"), {h, h});
      t.Add(absl::StrCat(l, "self_attn.", proj, ".bias"), {h});
    }
    t.Add(l + "self_attn_layer_norm.weight", {h});
    t.Add(l + "self_attn_layer_norm.bias", {h});
    t.Add(l + "fc1.weight", {f, h});
    t.Add(l + "fc1.bias", {f});
    t.Add(l + "fc2.weight", {h, f});
    t.Add(l + "fc2.bias", {h});
    t.Add(l + "final_layer_norm.weight", {h});
    t.Add(l + "final_layer_norm.bias", {h});
  }
  if (s.pre_norm) {
    t.Add(p + "final_layer_norm.weight", {h});
    t.Add(p + "final_layer_norm.bias", {h});
  }
  if (!s.tied) t.Add("lm_head.weight", {s.vocab, e});
  c.tensors = t.Take();
  return c;
}

void WriteHfFolder(const std::string& dir, const TinyCheckpoint& checkpoint) {
  WriteFileOrDie(dir + "/config.json", checkpoint.config.dump(2));
  WriteFileOrDie(dir + "/model.safetensors",
                 SerializeSafetensors(checkpoint.tensors));
}

void WriteShardedHfFolder(const std::string& dir,
                          const TinyCheckpoint& checkpoint, int shards) {
  WriteFileOrDie(dir + "/config.json", checkpoint.config.dump(2));
  std::vector<std::vector<StTensor>> parts(shards);
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t i = 0; i < checkpoint.tensors.size(); ++i) {
    const int shard = static_cast<int>(i % shards);
    const std::string name = absl::StrCat("model-0000", shard + 1, "-of-0000",
                                          shards, ".safetensors");
    parts[shard].push_back(checkpoint.tensors[i]);
    weight_map[checkpoint.tensors[i].name] = name;
  }
  for (int shard = 0; shard < shards; ++shard) {
    WriteFileOrDie(absl::StrCat(dir, "/model-0000", shard + 1, "-of-0000",
                                shards, ".safetensors"),
                   SerializeSafetensors(parts[shard]));
  }
  const nlohmann::json index = {
      {"metadata", {{"total_size", checkpoint.TotalBytes()}}},
      {"weight_map", weight_map}};
  WriteFileOrDie(dir + "/model.safetensors.index.json", index.dump(2));
}

}  // namespace dynsparse::testing
