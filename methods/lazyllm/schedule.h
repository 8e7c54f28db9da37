// LazyLLM's pruning schedule: before which layers tokens are pruned, and the
// fraction of the current token set each of those layers keeps.
#ifndef DYNSPARSE_METHODS_LAZYLLM_SCHEDULE_H_
#define DYNSPARSE_METHODS_LAZYLLM_SCHEDULE_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dynsparse {

// layer -> keep fraction in (0, 1]: layer is the first layer that runs on
// the reduced set, scored with the attention of layer - 1.
using PruneSchedule = std::map<int64_t, double>;

// "10:0.7,19:0.7,29:0.7". Layers >= 1, distinct; fractions in (0, 1].
absl::StatusOr<PruneSchedule> ParseSchedule(absl::string_view text);
// `stages` stages over 30/30/30/10%-style splits: the first stages - 1 share
// 90% of the layers equally, the last gets 10% (METHODS.md §2.2, Fig. 4a);
// each boundary keeps `keep`. Llama-2-7B (32 layers), 4 stages: 10, 19, 29.
absl::StatusOr<PruneSchedule> StagedSchedule(int64_t stages, double keep,
                                             int64_t num_layers);
// The fraction of token-layers a prefill computes if every boundary keeps
// exactly its fraction of a long prompt (the schedule's ideal cost).
double ScheduleComputedFraction(const PruneSchedule& schedule,
                                int64_t num_layers);
std::string FormatSchedule(const PruneSchedule& schedule);

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_LAZYLLM_SCHEDULE_H_
