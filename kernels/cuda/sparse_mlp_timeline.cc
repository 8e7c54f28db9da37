// Timeline of the one-launch sparse MLP (sparse_mlp_timeline.h).
#include "kernels/cuda/sparse_mlp_timeline.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dynsparse::cuda {
namespace {

constexpr const char* kEventNames[kFusedMlpEvents] = {
    "begins", "up_done", "activations_in", "down_done", "written"};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

absl::StatusOr<FusedMlpTimeline> SummarizeFusedMlpTimeline(
    absl::Span<const uint64_t> stamps, int calls, int blocks) {
  const int64_t per_call = int64_t{blocks} * kFusedMlpStamps;
  if (calls < 2 || blocks < 1 ||
      stamps.size() != static_cast<size_t>(calls * per_call)) {
    return absl::InvalidArgumentError(
        absl::StrCat("FusedMlpTimeline: ", stamps.size(), " stamps for ", calls,
                     " launches of ", blocks, " blocks (needs >= 2 launches, ",
                     kFusedMlpStamps, " stamps a block)"));
  }
  auto at = [&](int call, int block, int e) {
    return stamps[call * per_call + int64_t{block} * kFusedMlpStamps + e];
  };
  auto first_begin = [&](int call) {
    uint64_t t0 = UINT64_MAX;
    for (int blk = 0; blk < blocks; ++blk) t0 = std::min(t0, at(call, blk, 0));
    return t0;
  };
  // Per call: each event's min / median / max over the blocks since the
  // call's first begin; then the median of each over the calls.
  std::vector<std::vector<double>> stat(kFusedMlpEvents * 3);
  std::vector<std::vector<double>> by_sm(kFusedMlpEvents * 2);
  std::vector<double> spans, gaps, shared_counts;
  for (int call = 0; call < calls; ++call) {
    const uint64_t t0 = first_begin(call);
    uint64_t last = 0;
    std::map<uint64_t, int> on_sm;  // Blocks a SM id.
    for (int blk = 0; blk < blocks; ++blk) {
      last = std::max(last, at(call, blk, kFusedMlpEvents - 1));
      ++on_sm[at(call, blk, kFusedMlpSmSlot)];
    }
    // Whether each block shared its SM (1) or ran alone on it (0).
    std::vector<int> shares(blocks);
    for (int blk = 0; blk < blocks; ++blk) {
      shares[blk] = on_sm[at(call, blk, kFusedMlpSmSlot)] > 1;
    }
    shared_counts.push_back(std::count(shares.begin(), shares.end(), 1));
    for (int e = 0; e < kFusedMlpEvents; ++e) {
      std::vector<double> us(blocks), kind_us[2];
      for (int blk = 0; blk < blocks; ++blk) {
        us[blk] =
            (static_cast<double>(at(call, blk, e)) - static_cast<double>(t0)) *
            1e-3;
        kind_us[shares[blk]].push_back(us[blk]);
      }
      for (int kind = 0; kind < 2; ++kind) {
        by_sm[2 * e + kind].push_back(
            kind_us[kind].empty() ? 0.0 : Median(kind_us[kind]));
      }
      std::sort(us.begin(), us.end());
      stat[3 * e].push_back(us.front());
      stat[3 * e + 1].push_back(us[us.size() / 2]);
      stat[3 * e + 2].push_back(us.back());
    }
    spans.push_back((static_cast<double>(last) - static_cast<double>(t0)) *
                    1e-3);
    if (call + 1 < calls) {
      gaps.push_back((static_cast<double>(first_begin(call + 1)) -
                      static_cast<double>(last)) *
                     1e-3);
    }
  }
  FusedMlpTimeline out;
  out.blocks = blocks;
  out.calls = calls;
  out.span_us = Median(spans);
  out.between_calls_us = Median(gaps);
  out.shared_sm_blocks = static_cast<int>(Median(shared_counts));
  for (int e = 0; e < kFusedMlpEvents; ++e) {
    for (int q = 0; q < 3; ++q) out.events_us[e][q] = Median(stat[3 * e + q]);
    for (int kind = 0; kind < 2; ++kind) {
      out.by_sm_us[e][kind] = Median(by_sm[2 * e + kind]);
    }
  }
  return out;
}

std::string FusedMlpTimelineJson(const FusedMlpTimeline& timeline,
                                 const std::string& label) {
  std::string json = absl::StrFormat(
      "{\"timeline\": \"%s\", \"blocks\": %d, \"calls\": %d, \"span_us\": "
      "%.2f, \"between_calls_us\": %.2f, \"shared_sm_blocks\": %d",
      label, timeline.blocks, timeline.calls, timeline.span_us,
      timeline.between_calls_us, timeline.shared_sm_blocks);
  for (int e = 0; e < kFusedMlpEvents; ++e) {
    absl::StrAppendFormat(&json, ", \"%s_us\": [%.2f, %.2f, %.2f]",
                          kEventNames[e], timeline.events_us[e][0],
                          timeline.events_us[e][1], timeline.events_us[e][2]);
  }
  for (int e = 0; e < kFusedMlpEvents; ++e) {
    absl::StrAppendFormat(&json, ", \"%s_by_sm_us\": [%.2f, %.2f]",
                          kEventNames[e], timeline.by_sm_us[e][0],
                          timeline.by_sm_us[e][1]);
  }
  return json + "}";
}

}  // namespace dynsparse::cuda
