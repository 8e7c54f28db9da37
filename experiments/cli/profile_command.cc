// dynsparse profile: per-layer natural sparsity and predictor recall of a
// DejaVu predictors folder on a corpus (methods/dejavu/profile.h).
#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "datasets/corpus_registry.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/model_setup.h"
#include "methods/dejavu/profile.h"

namespace dynsparse {
namespace {

absl::StatusOr<nlohmann::json> Profile(const ParsedFlags& flags) {
  ASSIGN_OR_RETURN(ModelSpecRequest spec, RequestFromFlags(flags));
  spec.method = "dense";
  spec.method_args = MethodArgs();
  ASSIGN_OR_RETURN(OpenedModel opened, OpenModel(spec, {}));
  const ModelConfig& config = opened.model.config;
  ASSIGN_OR_RETURN(const PredictorSet predictors,
                   LoadPredictors(flags.Get("predictors"), config));
  ASSIGN_OR_RETURN(const CorpusText corpus, LoadCorpus(flags.Get("corpus")));
  ASSIGN_OR_RETURN(const int64_t tokens, flags.GetInt("tokens"));
  std::vector<int32_t> ids = opened.tokenizer->Encode(corpus.text, false);
  if (static_cast<int64_t>(ids.size()) > tokens) ids.resize(tokens);

  ProfileOptions options;
  ASSIGN_OR_RETURN(options.context, flags.GetInt("context"));
  if (opened.tokenizer->adds_bos() && opened.tokenizer->bos_id()) {
    options.bos_id = *opened.tokenizer->bos_id();
  }
  // The label rules the predictors were trained on are read back from their
  // metadata text only for display; profile applies calibration's defaults
  // unless told otherwise.
  ASSIGN_OR_RETURN(options.labels.mlp_label_fraction,
                   flags.GetDouble("mlp-label-fraction"));
  ASSIGN_OR_RETURN(options.labels.head_label_fraction,
                   flags.GetDouble("head-label-fraction"));
  const bool terminal = isatty(STDERR_FILENO);
  ASSIGN_OR_RETURN(
      nlohmann::json report,
      ProfilePredictors(
          config, opened.model.weights, *opened.backend, predictors, ids,
          options, [&](int64_t done, int64_t total) {
            if (terminal) {
              std::cerr << absl::StrFormat("\rprofile: %d/%d tokens", done,
                                           total)
                        << std::flush;
            }
          }));
  if (terminal) std::cerr << "\n";
  report["model"] = spec.path;
  report["predictors"] = flags.Get("predictors");
  report["corpus"] = corpus.name;
  report["tokens"] = ids.size();
  report["mlp_label"] = predictors.metadata.value("mlp_label", "");
  report["head_label"] = predictors.metadata.value("head_label", "");
  return report;
}

}  // namespace

int RunProfile(const CommandArgs& args) {
  std::vector<FlagSpec> specs = ModelFlagSpecs();
  specs.insert(
      specs.end(),
      {
          {"predictors", FlagKind::kValue,
           "predictors folder (dynsparse calibrate --train)"},
          {"corpus", FlagKind::kValue,
           "registered corpus name or a UTF-8 text file", "wikitext2"},
          {"tokens", FlagKind::kValue, "tokens to profile (at most)", "16384"},
          {"context", FlagKind::kValue, "tokens per window", "512"},
          {"mlp-label-fraction", FlagKind::kValue,
           "gated MLPs: top fraction of |act(gate)*up| counted active", "0.25"},
          {"head-label-fraction", FlagKind::kValue,
           "top fraction of heads (by output norm) counted active", "0.5"},
          {"threads", FlagKind::kValue, "CPU threads (0 = all cores)", "0"},
          {"dtype", FlagKind::kValue, "weight dtype: f32 | f16 | bf16", "f32"},
          {"json", FlagKind::kSwitch, "print one JSON object"},
      });
  if (WantsHelp(args)) {
    PrintCommandHelp("profile",
                     "Per-layer natural sparsity, predictor recall, and K for "
                     "95%/99% recall (DejaVu predictors).",
                     specs);
    return 0;
  }
  auto flags = ParseFlags(args, specs);
  if (!flags.ok()) return ReportError("profile", flags.status());
  auto report = Profile(*flags);
  if (!report.ok()) return ReportError("profile", report.status());
  if (flags->Has("json")) {
    std::cout << report->dump() << std::endl;
    return 0;
  }
  std::cout << absl::StrFormat(
      "# %s, %d tokens of %s\n"
      "layer  mlp_zero  mlp_K95mass  mlp_K95  mlp_K99  mlp_recall@keeps    "
      "heads_K95  heads_K99  heads_recall@keeps\n",
      (*report)["predictors"].get<std::string>(),
      (*report)["tokens"].get<int64_t>(),
      (*report)["corpus"].get<std::string>());
  for (const auto& l : (*report)["layers"]) {
    std::string mlp_recall, head_recall;
    for (const auto& at : l["mlp"]["at_keep"]) {
      absl::StrAppendFormat(&mlp_recall, "%.3f@%g ", at["recall"].get<double>(),
                            at["keep"].get<double>());
    }
    for (const auto& at : l["heads"]["at_keep"]) {
      absl::StrAppendFormat(&head_recall, "%.3f@%g ",
                            at["recall"].get<double>(),
                            at["keep"].get<double>());
    }
    std::cout << absl::StrFormat(
        "%5d  %8.3f  %11.1f  %7d  %7d  %-19s %9d  %9d  %s\n",
        l["layer"].get<int64_t>(), l["mlp"]["zero_fraction"].get<double>(),
        l["mlp"]["units_for_95pct_mass"].get<double>(),
        l["mlp"]["k_for_recall_0.95"].get<int64_t>(),
        l["mlp"]["k_for_recall_0.99"].get<int64_t>(), mlp_recall,
        l["heads"]["k_for_recall_0.95"].get<int64_t>(),
        l["heads"]["k_for_recall_0.99"].get<int64_t>(), head_recall);
  }
  return 0;
}

}  // namespace dynsparse
