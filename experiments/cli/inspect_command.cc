// dynsparse inspect: what a checkpoint holds, without running it.
#include <iostream>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "core/io/model_loader.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/model_setup.h"

namespace dynsparse {
namespace {

std::string_view FamilyName(ModelFamily family) {
  return family == ModelFamily::kOpt ? "opt" : "llama";
}

std::string_view RopeScalingName(RopeScalingKind kind) {
  switch (kind) {
    case RopeScalingKind::kNone:
      return "none";
    case RopeScalingKind::kLinear:
      return "linear";
    case RopeScalingKind::kLlama3:
      return "llama3";
  }
  return "?";
}

// Parameters actually loaded, counting a tensor shared by two slots once.
int64_t LoadedParameters(const ModelWeights& w) {
  std::vector<const Tensor*> all = {&w.tok_embed,    &w.pos_embed,
                                    &w.project_in,   &w.project_out,
                                    &w.final_norm_w, &w.final_norm_b};
  if (w.lm_head.empty() || w.lm_head.raw_data() != w.tok_embed.raw_data()) {
    all.push_back(&w.lm_head);
  }
  for (const LayerWeights& l : w.layers) {
    for (const Tensor* t :
         {&l.attn_norm_w, &l.attn_norm_b, &l.wq, &l.wk, &l.wv, &l.wo, &l.bq,
          &l.bk, &l.bv, &l.bo, &l.mlp_norm_w, &l.mlp_norm_b, &l.w_up, &l.w_gate,
          &l.w_down, &l.b_up, &l.b_gate, &l.b_down}) {
      all.push_back(t);
    }
  }
  int64_t total = 0;
  for (const Tensor* t : all) {
    if (!t->empty()) total += t->numel();
  }
  return total;
}

}  // namespace

int RunInspect(const CommandArgs& args) {
  std::vector<FlagSpec> specs = ModelFlagSpecs();
  specs.push_back({"json", FlagKind::kSwitch, "print one JSON object"});
  if (WantsHelp(args)) {
    PrintCommandHelp("inspect", "Family, dimensions, parameters, dtype, bytes.",
                     specs);
    return 0;
  }
  auto flags = ParseFlags(args, specs);
  if (!flags.ok()) return ReportError("inspect", flags.status());
  const std::string model = flags->Get("model");
  const bool want_tokenizer =
      flags->Has("tokenizer") ||
      !(model.ends_with(".bin") || absl::StartsWith(model, kRandomModelPrefix));
  auto opened =
      OpenModel(*flags, {.tokenizer = want_tokenizer, .runtime = false});
  if (!opened.ok()) return ReportError("inspect", opened.status());
  const ModelConfig& c = opened->model.config;

  nlohmann::json out = {
      {"model", opened->model.source},
      {"architecture", c.architecture},
      {"model_type", c.model_type},
      {"family", FamilyName(c.family)},
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.intermediate_size},
      {"num_layers", c.num_layers},
      {"num_heads", c.num_heads},
      {"num_kv_heads", c.num_kv_heads},
      {"head_dim", c.head_dim},
      {"max_position_embeddings", c.max_position_embeddings},
      {"pre_norm", c.pre_norm},
      {"tie_word_embeddings", c.tie_word_embeddings},
      // Counted from the tensors loaded, or from the shapes when only the
      // configuration was read (random: presets).
      {"parameters", opened->model.weights.layers.empty()
                         ? c.ParameterCount()
                         : LoadedParameters(opened->model.weights)},
      {"weights_bytes_f16", 2 * c.ParameterCount()},
      {"checkpoint_dtype", DTypeName(c.checkpoint_dtype)},
      {"checkpoint_bytes", opened->model.checkpoint_bytes},
      {"weights_id", c.weights_id},
  };
  if (c.family == ModelFamily::kLlama) {
    out["rope_theta"] = c.rope_theta;
    out["rope_scaling"] = RopeScalingName(c.rope_scaling.kind);
  } else {
    out["word_embed_proj_dim"] = c.embed_dim();
  }
  if (opened->tokenizer) {
    out["tokenizer_vocab_size"] = opened->tokenizer->vocab_size();
    out["tokenizer_adds_bos"] = opened->tokenizer->adds_bos();
  }
  if (flags->Has("json")) {
    std::cout << out.dump() << std::endl;
  } else {
    for (const auto& [key, value] : out.items()) {
      std::cout << absl::StrFormat("%-24s %s\n", key, value.dump());
    }
  }
  return 0;
}

}  // namespace dynsparse
