#include "experiments/bench/lowrank_predictor_method.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace dynsparse {
namespace {

absl::Status BadArg(const std::string& arg, const char* why) {
  return absl::InvalidArgumentError(
      absl::StrCat("dejavu-timing argument '", arg, "': ", why));
}

// splitmix64: a fast, seedable stream for the random predictor weights.
uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform weights with the variance of N(0, 1/fan_in), stored as f16.
Tensor RandomF16(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> v(rows * cols);
  const float scale = std::sqrt(3.0f / static_cast<float>(cols));
  for (size_t i = 0; i < v.size(); ++i) {
    const uint64_t r = Mix64(seed * 0x100000001b3ull + i);
    v[i] = (static_cast<float>(r >> 40) / 16777216.0f * 2.0f - 1.0f) * scale;
  }
  return Tensor::FromF32(v, {rows, cols}, DType::kF16);
}

int64_t KeepCount(double keep, int64_t units) {
  if (keep >= 1.0) return 0;
  return std::clamp<int64_t>(std::llround(keep * units), 1, units);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Method>> LowRankPredictorMethod::Create(
    const std::vector<std::string>& args) {
  Options o;
  for (const std::string& arg : args) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos) return BadArg(arg, "expected key=value");
    const std::string key = arg.substr(0, eq), value = arg.substr(eq + 1);
    bool ok = true;
    if (key == "mlp_keep") {
      ok = absl::SimpleAtod(value, &o.mlp_keep) && o.mlp_keep > 0;
    } else if (key == "head_keep") {
      ok = absl::SimpleAtod(value, &o.head_keep) && o.head_keep > 0;
    } else if (key == "dense_first_mlp") {
      ok = absl::SimpleAtoi(value, &o.dense_first_mlp);
    } else if (key == "dense_last_mlp") {
      ok = absl::SimpleAtoi(value, &o.dense_last_mlp);
    } else if (key == "dense_first_heads") {
      ok = absl::SimpleAtoi(value, &o.dense_first_heads);
    } else if (key == "dense_last_heads") {
      ok = absl::SimpleAtoi(value, &o.dense_last_heads);
    } else if (key == "predictors") {
      ok = value.rfind("random:", 0) == 0 &&
           absl::SimpleAtoi(value.substr(7), &o.rank) && o.rank > 0;
      if (!ok) return BadArg(arg, "only predictors=random:D (D > 0)");
    } else if (key == "lazy_kv_window") {
      ok = absl::SimpleAtoi(value, &o.lazy_kv_window) &&
           IsLazyKvWindow(o.lazy_kv_window);
    } else if (key == "execution") {
      ok = value == "sparse" || value == "masked";
      o.sparse = value == "sparse";
    } else if (key == "sparse_prefill") {
      ok = value == "0" || value == "1";
      o.sparse_prefill = value == "1";
    } else if (key == "seed") {
      ok = absl::SimpleAtoi(value, &o.seed);
    } else {
      return BadArg(arg, "unknown key");
    }
    if (!ok) return BadArg(arg, "bad value");
  }
  return std::make_unique<LowRankPredictorMethod>(o);
}

absl::StatusOr<LowRankPredictorMethod::Predictor> LowRankPredictorMethod::Make(
    int64_t k, int64_t units, int64_t hidden, uint64_t seed) {
  Predictor p;
  p.k = k;
  if (k == 0) return p;
  absl::StatusOr<Tensor> p1 =
      backend_->Upload(RandomF16(options_.rank, hidden, seed));
  if (!p1.ok()) return p1.status();
  absl::StatusOr<Tensor> p2 =
      backend_->Upload(RandomF16(units, options_.rank, seed + 1));
  if (!p2.ok()) return p2.status();
  p.p1 = *p1;
  p.p2 = *p2;
  return p;
}

absl::Status LowRankPredictorMethod::Attach(const ModelConfig& config,
                                            Backend& backend) {
  backend_ = &backend;
  layers_.assign(config.num_layers, Layer{});
  const int64_t n = config.num_layers;
  for (int64_t l = 0; l < n; ++l) {
    const bool mlp_dense =
        l < options_.dense_first_mlp || l >= n - options_.dense_last_mlp;
    const bool head_dense =
        l < options_.dense_first_heads || l >= n - options_.dense_last_heads;
    const uint64_t seed = options_.seed * 1000003 + 4 * l;
    absl::StatusOr<Predictor> mlp = Make(
        mlp_dense ? 0 : KeepCount(options_.mlp_keep, config.intermediate_size),
        config.intermediate_size, config.hidden_size, seed);
    if (!mlp.ok()) return mlp.status();
    absl::StatusOr<Predictor> heads =
        Make(head_dense ? 0 : KeepCount(options_.head_keep, config.num_heads),
             config.num_heads, config.hidden_size, seed + 2);
    if (!heads.ok()) return heads.status();
    layers_[l] = {*mlp, *heads};
  }
  return absl::OkStatus();
}

void LowRankPredictorMethod::Select(const Predictor& p, const LayerSite& site,
                                    const Tensor& x, UnitSelection* sel) {
  if (p.k == 0) return;
  if (site.phase == Phase::kPrefill && !options_.sparse_prefill) return;
  const int64_t rows = x.dim(0);
  Tensor low = backend_->Allocate(DType::kF32, {rows, options_.rank});
  backend_->Linear(x, p.p1, Tensor(), &low);
  Tensor scores = backend_->Allocate(DType::kF32, {rows, p.p2.dim(0)});
  backend_->Linear(low, p.p2, Tensor(), &scores);
  sel->all = false;
  sel->per_row = p.k;
  sel->ids = backend_->Allocate(DType::kI32, {rows, p.k});
  backend_->TopK(scores, p.k, &sel->ids);
}

void LowRankPredictorMethod::SelectHeads(const LayerSite& site, const Tensor& x,
                                         UnitSelection* heads) {
  Select(layers_[site.layer].heads, site, x, heads);
}

void LowRankPredictorMethod::SelectNeurons(const LayerSite& site,
                                           const Tensor& x,
                                           UnitSelection* neurons) {
  Select(layers_[site.layer].mlp, site, x, neurons);
}

}  // namespace dynsparse
