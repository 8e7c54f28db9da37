#include "methods/lazyllm/schedule.h"

#include <cmath>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace dynsparse {

absl::StatusOr<PruneSchedule> ParseSchedule(absl::string_view text) {
  PruneSchedule schedule;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    std::vector<absl::string_view> parts = absl::StrSplit(item, ':');
    int64_t layer = 0;
    double keep = 0.0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &layer) ||
        !absl::SimpleAtod(parts[1], &keep)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "schedule item '", item, "' is not LAYER:KEEP (e.g. 10:0.7)"));
    }
    if (layer < 1 || !(keep > 0.0 && keep <= 1.0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "schedule item '", item, "': layer must be >= 1 and keep in (0, 1]"));
    }
    if (!schedule.emplace(layer, keep).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("schedule names layer ", layer, " twice"));
    }
  }
  return schedule;
}

absl::StatusOr<PruneSchedule> StagedSchedule(int64_t stages, double keep,
                                             int64_t num_layers) {
  if (stages < 1 || !(keep > 0.0 && keep <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "stages must be >= 1 and keep in (0, 1] (got stages=", stages,
        " keep=", keep, ")"));
  }
  PruneSchedule schedule;
  for (int64_t i = 1; i < stages; ++i) {
    const double at = 0.9 * static_cast<double>(num_layers * i) /
                      static_cast<double>(stages - 1);
    const int64_t layer = static_cast<int64_t>(std::lround(at));
    if (layer >= 1 && layer < num_layers) schedule[layer] = keep;
  }
  return schedule;
}

double ScheduleComputedFraction(const PruneSchedule& schedule,
                                int64_t num_layers) {
  double kept = 1.0, total = 0.0;
  for (int64_t l = 0; l < num_layers; ++l) {
    if (auto it = schedule.find(l); it != schedule.end()) kept *= it->second;
    total += kept;
  }
  return total / static_cast<double>(num_layers);
}

std::string FormatSchedule(const PruneSchedule& schedule) {
  return absl::StrJoin(schedule, ",", [](std::string* out, const auto& e) {
    absl::StrAppend(out, e.first, ":", e.second);
  });
}

}  // namespace dynsparse
