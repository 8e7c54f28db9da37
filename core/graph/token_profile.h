// TokenProfile: an opt-in wall-clock breakdown of token-pruned decode steps
// (Session::EnableTokenProfile, `dynsparse-bench --token-profile`), to find
// where a step that revives tokens from the Aux Cache spends its time.
//
// A profiled step waits for the device at every phase boundary (a 4-byte
// read), so each phase is charged the device work it issued, but host and
// device no longer overlap: profiled steps run slower than plain ones. Read
// the phases as a split of a step, and time the step itself unprofiled.
// A host-only profile (`--token-profile-host`) never waits: each phase is
// the host's own time at full speed, which is what a device left idle after
// a probe's download is waiting for.
#ifndef DYNSPARSE_CORE_GRAPH_TOKEN_PROFILE_H_
#define DYNSPARSE_CORE_GRAPH_TOKEN_PROFILE_H_

#include <array>
#include <cstdint>

namespace dynsparse {

struct TokenProfile {
  // Layers are grouped by the rows they compute in the step: 1 (the new
  // token alone), 2-8 (GEMV and split-K decode attention), 9-64, 65-255
  // (GEMM, flash attention), >= 256 (tensor-core attention).
  static constexpr int kBuckets = 5;
  static int Bucket(int64_t rows);
  static const char* BucketName(int bucket);

  bool host_only = false;  // Phases without waiting for the device.
  int64_t steps = 0;
  double steps_ms = 0;   // Whole RunTokenLayers calls (all layers).
  double select_ms = 0;  // The probe, its read-back and the method's choice.
  double move_ms = 0;    // Row bookkeeping and moves (Aux Cache, next x).
  int64_t probes = 0;    // Selections that read the probe.
  double probe_wait_ms = 0;  // The host blocked on the probes' downloads.
  std::array<double, kBuckets> layer_ms{};       // Until the device finished.
  std::array<double, kBuckets> layer_host_ms{};  // Issuing them (host).
  std::array<int64_t, kBuckets> layers{};
  std::array<int64_t, kBuckets> rows{};  // Rows computed, new token included.
  int64_t revived = 0;                   // Token-layers from the Aux Cache.
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_TOKEN_PROFILE_H_
