#include "core/model_presets.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/model_shapes.h"

namespace dynsparse {
namespace {

ModelPreset Opt(const char* name, int64_t hidden, int64_t layers, int64_t heads,
                int64_t ffn) {
  ModelConfig c = OptConfigFromShape({.vocab_size = 50272,
                                      .hidden_size = hidden,
                                      .intermediate_size = ffn,
                                      .num_layers = layers,
                                      .num_heads = heads,
                                      .max_position_embeddings = 2048});
  c.bos_token_id = 2;
  c.eos_token_ids = {2};
  c.pad_token_id = 1;
  c.checkpoint_dtype = DType::kF16;
  return {name, c};
}

ModelPreset Llama(const char* name, int64_t vocab, int64_t hidden,
                  int64_t layers, int64_t heads, int64_t kv_heads,
                  int64_t intermediate, int64_t max_positions,
                  double rope_theta) {
  ModelConfig c =
      LlamaConfigFromShape({.vocab_size = vocab,
                            .hidden_size = hidden,
                            .intermediate_size = intermediate,
                            .num_layers = layers,
                            .num_heads = heads,
                            .num_kv_heads = kv_heads,
                            .max_position_embeddings = max_positions});
  c.rope_theta = rope_theta;
  c.checkpoint_dtype = DType::kF16;
  return {name, c};
}

std::vector<ModelPreset> BuildPresets() {
  std::vector<ModelPreset> presets = {
      Opt("opt-125m", 768, 12, 12, 3072),
      Opt("opt-1.3b", 2048, 24, 32, 8192),
      Opt("opt-2.7b", 2560, 32, 32, 10240),
      Opt("opt-6.7b", 4096, 32, 32, 16384),
      Opt("opt-13b", 5120, 40, 40, 20480),
      Opt("opt-30b", 7168, 48, 56, 28672),
      Opt("opt-66b", 9216, 64, 72, 36864),
      Opt("opt-175b", 12288, 96, 96, 49152),
      Llama("llama-2-7b", 32000, 4096, 32, 32, 32, 11008, 4096, 10000.0),
      Llama("llama-2-13b", 32000, 5120, 40, 40, 40, 13824, 4096, 10000.0),
      Llama("llama-2-70b", 32000, 8192, 80, 64, 8, 28672, 4096, 10000.0),
      Llama("llama-3-8b", 128256, 4096, 32, 32, 8, 14336, 8192, 500000.0),
  };
  // OPT-350m is the post-LN outlier: 512-wide embeddings projected to 1024.
  ModelPreset opt350 = Opt("opt-350m", 1024, 24, 16, 4096);
  opt350.config.pre_norm = false;
  opt350.config.final_norm = false;
  opt350.config.word_embed_proj_dim = 512;
  presets.insert(presets.begin() + 1, opt350);
  for (ModelPreset& p : presets) {
    if (p.config.family == ModelFamily::kLlama) {
      p.config.bos_token_id = 1;
      p.config.eos_token_ids = {2};
    }
  }
  return presets;
}

}  // namespace

const std::vector<ModelPreset>& ModelPresets() {
  static const auto* const kPresets =
      new std::vector<ModelPreset>(BuildPresets());
  return *kPresets;
}

absl::StatusOr<ModelConfig> FindModelPreset(absl::string_view name) {
  std::vector<std::string> names;
  for (const ModelPreset& p : ModelPresets()) {
    if (p.name == name) return p.config;
    names.push_back(p.name);
  }
  return absl::NotFoundError(absl::StrCat(
      "unknown model preset '", name, "' (valid: ", absl::StrJoin(names, ", "),
      ", or random:PATH/config.json)"));
}

}  // namespace dynsparse
