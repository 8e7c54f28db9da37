// Session's token path (LazyLLM, shared/METHODS.md §2.3): every step starts
// from the full context at layer 0; before each later layer the method picks
// the tokens that flow on from those live at the previous layer. At layer l,
// of the live set T_l only the tokens without K/V at l are computed (C_l):
//   - rows computed at l - 1 in this step (still in x), or
//   - tokens dropped after l - 1 in an earlier step, revived from Aux(l - 1).
// Computed rows dropped before l go to Aux(l - 1). Attention runs C_l's rows
// as queries over T_l's cached keys, causal by original position, and RoPE
// uses original positions throughout. Presence only grows, so a (token,
// layer) is computed at most once per sequence (TokenState counts it).
//
// Why T_l and not every token with K/V at l as keys: a token the method
// dropped is out of the layer's context in this step (Lazy-Llama does the
// same); with keep 1.0 the two coincide. Method::AttendsToCachedTokens asks
// for the other choice, as an ablation.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/session.h"

namespace dynsparse {
namespace {

class Candidates : public TokenCandidates {
 public:
  // `probe`: the scores. `started_top`: the indices a probe started with
  // Backend::TopCount holds for a count, or nothing (an empty optional).
  using StartedTop =
      std::function<std::optional<std::vector<int32_t>>(int64_t count)>;
  Candidates(absl::Span<const int32_t> positions, int32_t first_new,
             int64_t first_protected, std::function<Tensor()> probe,
             StartedTop started_top)
      : positions_(positions),
        first_new_(first_new),
        first_protected_(first_protected),
        probe_(std::move(probe)),
        started_top_(std::move(started_top)) {}

  absl::Span<const int32_t> positions() const override { return positions_; }
  int32_t first_new() const override { return first_new_; }
  int64_t first_protected() const override { return first_protected_; }
  absl::Span<const float> LastQueryAttention() override {
    if (scores_.empty()) scores_ = probe_();
    return absl::MakeConstSpan(scores_.data<float>(),
                               static_cast<size_t>(scores_.numel()));
  }
  std::vector<int32_t> TopLastQueryAttention(int64_t count) override {
    if (scores_.empty()) {
      std::optional<std::vector<int32_t>> top = started_top_(count);
      if (top.has_value()) {
        probed_ = true;
        return *std::move(top);
      }
    }
    return TokenCandidates::TopLastQueryAttention(count);
  }
  bool probed() const { return probed_ || !scores_.empty(); }

 private:
  absl::Span<const int32_t> positions_;
  int32_t first_new_;
  int64_t first_protected_;
  std::function<Tensor()> probe_;
  StartedTop started_top_;
  Tensor scores_;
  bool probed_ = false;  // Answered from a started TopCount.
};

// The positions of `live` (ascending) without K/V at a layer, whose row of
// presence flags is `present`: the rows to compute there. Branch-free, as
// it runs over the whole context at every layer of every step.
void WithoutKv(absl::Span<const int32_t> live, const uint8_t* present,
               std::vector<int32_t>* out) {
  out->resize(live.size());
  int32_t* o = out->data();
  size_t n = 0;
  for (const int32_t p : live) {
    o[n] = p;
    n += present[p] == 0;
  }
  out->resize(n);
}

// The positions below `end` that are in `live` (ascending) or have K/V at
// the layer: the keys when the method attends to cached tokens. A byte mask
// (the presence row with the live positions set) and one branch-free pass:
// a merge that tested the next live position at every step took ~4x as
// long (37 against 10 us over 16k positions on the development machine),
// and this runs at every layer of every step while the GPU may wait.
void LiveOrWithKv(absl::Span<const int32_t> live, const uint8_t* present,
                  int32_t end, std::vector<uint8_t>* mask,
                  std::vector<int32_t>* out) {
  mask->assign(present, present + end);
  uint8_t* m = mask->data();
  for (const int32_t p : live) m[p] = 1;
  out->resize(static_cast<size_t>(end));
  int32_t* o = out->data();
  size_t n = 0;
  for (int32_t p = 0; p < end; ++p) {
    o[n] = p;
    n += m[p] != 0;
  }
  out->resize(n);
}

// The live set after a selection: the kept candidates plus the protected
// ones, ascending. Rejects indices that are out of range or not ascending.
absl::Status ApplySelection(const TokenSelection& keep, int64_t layer,
                            int64_t first_protected,
                            std::vector<int32_t>* live) {
  std::vector<int32_t> next;
  next.reserve(live->size());
  int64_t previous = -1;
  for (int32_t i : keep.keep_rows) {
    if (i <= previous || i >= static_cast<int64_t>(live->size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "token selection before layer ", layer, ": candidate index ", i,
          " is out of range or not ascending (", live->size(), " candidates)"));
    }
    previous = i;
    if (i < first_protected) next.push_back((*live)[i]);
  }
  for (int64_t i = first_protected; i < static_cast<int64_t>(live->size());
       ++i) {
    next.push_back((*live)[i]);
  }
  *live = std::move(next);
  return absl::OkStatus();
}

// Wall time between the phase boundaries of a profiled step. Each Lap
// first waits for the device (a 4-byte read of x), so a phase is charged the
// device work it issued; `issue_ms` gets the host's part (until the wait).
// Host only: no waits, each phase is the host's time. Off (no profile):
// does nothing.
class PhaseClock {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts from an idle device (waits for what x's producers issued).
  PhaseClock(Backend& backend, bool on, bool host_only, const Tensor& x)
      : backend_(backend), on_(on), wait_(on && !host_only) {
    if (wait_) Wait(x);
    start_ = last_ = Clock::now();
  }

  void Lap(const Tensor& x, double* ms, double* issue_ms = nullptr) {
    if (!on_) return;
    const Clock::time_point issued = Clock::now();
    Clock::time_point done = issued;
    if (wait_) {
      Wait(x);
      done = Clock::now();
    }
    *ms += Ms(done - last_);
    if (issue_ms != nullptr) *issue_ms += Ms(issued - last_);
    last_ = done;
  }
  double SinceStart() const { return Ms(last_ - start_); }

 private:
  static double Ms(Clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
  }
  void Wait(const Tensor& x) {
    backend_.ReadNow(x.Reshape({x.numel()}).Rows(0, 1));
  }

  Backend& backend_;
  bool on_;
  bool wait_;
  Clock::time_point start_, last_;
};

}  // namespace

Tensor Session::ProbeLastQuery(int64_t key_layer,
                               absl::Span<const int32_t> keys) {
  Tensor probs =
      backend_.Allocate(DType::kF32, {static_cast<int64_t>(keys.size())});
  LastQueryArgs args;
  args.q = &last_query_;
  args.k_cache = &cache_.keys(key_layer);
  args.key_positions = keys;
  args.num_heads = config_.num_heads;
  args.num_kv_heads = config_.num_kv_heads;
  args.head_dim = config_.head_dim;
  args.scale = 1.0f / std::sqrt(static_cast<float>(config_.head_dim));
  args.out = &probs;
  backend_.LastQueryAttention(args);
  return probs;
}

void Session::StartNextProbe(int64_t layer) {
  FinishProbe(started_probe_layer_);  // One download at a time.
  // Beside the attention (CUDA: on the side stream): only the host reads
  // the result, and the probe reads q and this layer's keys, which nothing
  // writes before the next residual add joins the side work.
  backend_.BeginSideWork();
  Tensor scores = ProbeLastQuery(layer, next_probe_keys_);
  started_probe_top_count_ = next_probe_top_.count;
  if (started_probe_top_count_ > 0) {
    Tensor top = backend_.Allocate(DType::kI32, {started_probe_top_count_});
    backend_.TopCount(scores.Rows(0, next_probe_top_.prunable),
                      started_probe_top_count_, &top);
    started_probe_ = backend_.StartRead(top);
  } else {
    started_probe_ = backend_.StartRead(scores);
  }
  backend_.EndSideWork();
  started_probe_layer_ = layer + 1;
}

Tensor Session::FinishProbe(int64_t layer) {
  if (started_probe_layer_ < 0 || started_probe_layer_ != layer) {
    return Tensor();
  }
  started_probe_layer_ = -1;
  return backend_.FinishRead(std::move(started_probe_));
}

absl::Status Session::RunTokenLayers(absl::Span<const int32_t> positions,
                                     Phase phase, int64_t first_logit_row,
                                     Tensor* x, Tensor* pending) {
  TokenState& state = *tokens_;
  FinishProbe(started_probe_layer_);  // Left by a step that failed.
  const int32_t first_new = positions.front();
  const int32_t end = positions.back() + 1;
  const int32_t protect_from = positions[first_logit_row];
  if (first_new == 0) state.BeginPrompt(end);

  std::vector<int32_t> live(static_cast<size_t>(end));  // T_l
  for (int32_t p = 0; p < end; ++p) live[p] = p;
  std::vector<int32_t> rows(positions.begin(), positions.end());  // x's rows
  bool contiguous = true;  // live == [0, end)
  // Method::AttendsToCachedTokens: the keys, when they are more than T_l.
  const bool attends_to_cached = method_.AttendsToCachedTokens();
  std::vector<int32_t> with_cached;
  std::vector<uint8_t> with_cached_mask;  // LiveOrWithKv's scratch
  TokenProfile* profile = phase == Phase::kDecode ? state.profile() : nullptr;
  TokenProfile unused;  // Laps of an unprofiled step go nowhere.
  TokenProfile& times = profile != nullptr ? *profile : unused;
  PhaseClock clock(backend_, profile != nullptr,
                   profile != nullptr && profile->host_only, *x);

  for (int64_t layer = 0; layer < config_.num_layers; ++layer) {
    int64_t revived = 0;
    bool rows_changed = false;
    if (layer > 0) {
      const int64_t first_protected =
          std::lower_bound(live.begin(), live.end(), protect_from) -
          live.begin();
      const std::vector<int32_t>& keys = live;
      // The host waits for a started probe's download in one of these two.
      const auto waited_since = [&times](auto start) {
        times.probe_wait_ms += std::chrono::duration<double, std::milli>(
                                   std::chrono::steady_clock::now() - start)
                                   .count();
      };
      Candidates candidates(
          keys, first_new, first_protected,
          [&, layer] {
            const auto wait_start = std::chrono::steady_clock::now();
            Tensor started = FinishProbe(layer);
            // A started TopCount's indices are no scores: probe again.
            Tensor probe =
                started.empty() || started.dtype() != DType::kF32
                    ? backend_.ReadNow(ProbeLastQuery(layer - 1, keys))
                    : started;
            waited_since(wait_start);
            return probe;
          },
          [&, layer](int64_t count) -> std::optional<std::vector<int32_t>> {
            if (started_probe_layer_ != layer ||
                started_probe_top_count_ != count) {
              return std::nullopt;
            }
            const auto wait_start = std::chrono::steady_clock::now();
            Tensor top = FinishProbe(layer);
            waited_since(wait_start);
            const int32_t* p = top.data<int32_t>();
            return std::vector<int32_t>(p, p + top.numel());
          });
      TokenSelection keep;
      method_.SelectTokens({layer, phase}, candidates, &keep);
      FinishProbe(layer);  // Started and not asked for.
      if (candidates.probed()) ++times.probes;
      clock.Lap(*x, &times.select_ms);
      if (!keep.all) {
        const size_t before = live.size();
        absl::Status s = ApplySelection(keep, layer, first_protected, &live);
        if (!s.ok()) return s;
        contiguous = contiguous && live.size() == before;
      }

      // C_l = T_l minus the tokens with K/V at this layer. Rows of x lack
      // K/V here (they lacked it at l - 1 until this step), so a merge of
      // two ascending lists sorts every token into batch, revival or drop.
      std::vector<int32_t> compute;
      WithoutKv(live, state.present_row(layer), &compute);
      if (compute != rows) {
        rows_changed = true;
        if (!pending->empty()) {  // Fold the residual before moving rows.
          backend_.WaitAllSideWork();
          backend_.AddInPlace(*pending, x);
          *pending = Tensor();
        }
        std::vector<int32_t> batch_src, batch_dst, aux_src, aux_dst, drop_src,
            drop_pos;
        size_t r = 0;
        for (size_t c = 0; c < compute.size(); ++c) {
          while (r < rows.size() && rows[r] < compute[c]) {
            drop_src.push_back(static_cast<int32_t>(r));
            drop_pos.push_back(rows[r]);
            ++r;
          }
          if (r < rows.size() && rows[r] == compute[c]) {
            batch_src.push_back(static_cast<int32_t>(r++));
            batch_dst.push_back(static_cast<int32_t>(c));
          } else {
            if (!state.in_aux(layer - 1, compute[c])) {
              return absl::InternalError(absl::StrCat(
                  "token path: position ", compute[c], " has no K/V at layer ",
                  layer, " and no Aux(", layer - 1, ") entry"));
            }
            aux_src.push_back(compute[c]);
            aux_dst.push_back(static_cast<int32_t>(c));
          }
        }
        for (; r < rows.size(); ++r) {
          drop_src.push_back(static_cast<int32_t>(r));
          drop_pos.push_back(rows[r]);
        }
        if (!drop_src.empty()) {
          backend_.CopyRows(*x, drop_src, drop_pos,
                            &state.Aux(layer - 1, backend_));
          state.MarkAux(layer - 1, drop_pos);
        }
        Tensor next = backend_.Allocate(
            DType::kF32,
            {static_cast<int64_t>(compute.size()), config_.hidden_size});
        if (!batch_src.empty())
          backend_.CopyRows(*x, batch_src, batch_dst, &next);
        if (!aux_src.empty()) {
          backend_.CopyRows(state.Aux(layer - 1, backend_), aux_src, aux_dst,
                            &next);
        }
        revived = static_cast<int64_t>(aux_src.size());
        *x = next;
        rows = std::move(compute);
      }
      clock.Lap(*x, &times.move_ms);
    }
    live_keys_ = contiguous ? absl::Span<const int32_t>() : live;
    if (!contiguous && attends_to_cached) {
      // T_l plus the tokens earlier steps left K/V for at this layer (rows
      // computed now get theirs in RunLayer).
      LiveOrWithKv(live, state.present_row(layer), end, &with_cached_mask,
                   &with_cached);
      live_keys_ = static_cast<int32_t>(with_cached.size()) == end
                       ? absl::Span<const int32_t>()
                       : absl::Span<const int32_t>(with_cached);
    }
    // live is the next layer's candidate set: its probe may start as soon
    // as this layer has written its keys.
    const bool probe_next = layer + 1 < config_.num_layers &&
                            method_.MayProbeBefore({layer + 1, phase});
    next_probe_keys_ =
        probe_next ? absl::MakeConstSpan(live) : absl::Span<const int32_t>();
    next_probe_top_ = ProbeTop();
    if (probe_next && backend_.TopCountEnabled()) {
      // Layer + 1's candidates are `live`, protected from the same position.
      next_probe_top_.prunable =
          std::lower_bound(live.begin(), live.end(), protect_from) -
          live.begin();
      const int64_t count = method_.ProbeTopCount(
          {layer + 1, phase}, static_cast<int64_t>(live.size()),
          next_probe_top_.prunable);
      // TopCount picks a proper subset; the method needs no score otherwise.
      if (count > 0 && count < next_probe_top_.prunable) {
        next_probe_top_.count = count;
      }
    }
    RunLayer(layer, phase, rows, x, pending, rows_changed);
    next_probe_keys_ = absl::Span<const int32_t>();
    next_probe_top_ = ProbeTop();
    state.MarkComputed(layer, rows, revived);
    const int bucket = TokenProfile::Bucket(static_cast<int64_t>(rows.size()));
    clock.Lap(*x, &times.layer_ms[bucket], &times.layer_host_ms[bucket]);
    ++times.layers[bucket];
    times.rows[bucket] += static_cast<int64_t>(rows.size());
    times.revived += revived;
  }
  if (profile != nullptr) {
    ++profile->steps;
    profile->steps_ms += clock.SinceStart();
  }
  live_keys_ = {};
  if (first_new == 0) state.EndPrefill();
  return absl::OkStatus();
}

}  // namespace dynsparse
